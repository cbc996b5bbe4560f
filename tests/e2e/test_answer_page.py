"""The search page's "Answer" button in headless Chromium: ``winnow serve`` on loopback with
``OLLAMA_HOST`` pointing at the loopback fake Ollama, so the real handler, the real Ollama adapter and
the page's JavaScript all run. The answer's citations are links that bring the cited passage into view."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import fresh_page, run_search, text_of, wait_for
from tests.support.serve import serving, upload
from winnow_fakes.fake_model import ModelFault
from winnow_fakes.fake_ollama import FakeOllamaServer
from winnow_local.web.server import WinnowHTTPServer

pytestmark = pytest.mark.slow

TENANT = "answerpage"
DOCS = {
    "people/holidays.md": b"# Holidays\n\n## Allowance\n\nEvery employee receives twenty-eight days of paid "
    b"holiday per year and may carry five days over into the next year.\n",
    "finance/expenses.md": b"# Expenses\n\n## Travel\n\nTravel expenses are reimbursed within fourteen days "
    b"when submitted with receipts through the finance portal.\n",
}
QUESTION = "How many days of paid holiday does every employee receive?"


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, fake_ollama_server: FakeOllamaServer
) -> Iterator[WinnowHTTPServer]:
    home = tmp_path_factory.mktemp("answer-page") / "home"
    env = {
        "OLLAMA_HOST": fake_ollama_server.url,
        "WINNOW_ANSWER_MAX_ATTEMPTS": "2",
        "WINNOW_ANSWER_BACKOFF_MAX_SECONDS": "0",
    }
    with serving(home, env) as httpd:
        for key, data in DOCS.items():
            upload(httpd, TENANT, key, data)
        yield httpd


@pytest.fixture(scope="module")
def browser(chromium: Any) -> Any:
    """A window 700 pixels high, so a cited passage far down the page starts out of view."""
    return fresh_page(chromium, 1280, 700)


@pytest.fixture
def page(browser: Any, server: WinnowHTTPServer, fake_ollama: FakeOllamaServer) -> Any:
    browser.get(f"{server.url}/?tenant={TENANT}")
    return browser


def _ask(driver: Any, query: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    box = driver.find_element(By.ID, "query")
    box.clear()
    box.send_keys(query)
    # The button is offered once the page has learnt from the server that an answer model is configured
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "answer-button").is_displayed())
    driver.find_element(By.ID, "answer-button").click()


def test_answer_shows_above_the_passages_with_citations_that_open_the_passage(
    page: Any, fake_ollama: FakeOllamaServer
) -> None:
    from selenium.webdriver.common.by import By

    # Given the page for a tenant with a holidays policy, when the user asks and presses Answer
    _ask(page, QUESTION)
    [text] = wait_for(page, "#answer .answer-text")
    # Then the answer, from the holidays passage, shows with a link for its citation
    assert "twenty-eight days" in text.text
    [link] = text.find_elements(By.CSS_SELECTOR, "a.cite")
    rank = int(link.text.strip("[]"))
    assert link.get_attribute("href").endswith(f"#result-{rank}")
    target = page.find_element(By.ID, f"result-{rank}")
    assert "twenty-eight days" in text_of(target, ".passage")
    assert text_of(target, ".citation .doc") == "Document: people/holidays.md"
    assert "llama3.2" in text_of(page, "#answer .answer-meta")
    assert len(fake_ollama.chat_requests()) == 1
    # When the citation is clicked, then its passage is highlighted, focused and in view
    page.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    link.click()
    assert "cited-target" in target.get_attribute("class")
    assert page.execute_script("return document.activeElement.id") == f"result-{rank}"
    top = page.execute_script("return arguments[0].getBoundingClientRect().top", target)
    assert 0 <= top < 700


def test_nothing_relevant_shows_the_message_and_calls_no_model(
    page: Any, fake_ollama: FakeOllamaServer
) -> None:
    _ask(page, "What is the best recipe for sourdough bread?")
    [none] = wait_for(page, "#results li.nothing-relevant")
    assert "No relevant passages found" in none.text
    assert fake_ollama.total_requests == 0
    # and the page says so once, not in the results, the status line and the answer panel each
    body = page.find_element("tag name", "body").text
    assert body.count("No relevant passages found") == 1, body
    assert not page.find_element("id", "answer").is_displayed()


def test_a_model_outage_shows_the_apis_message(page: Any, fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.set_outage(ModelFault.unavailable())
    _ask(page, QUESTION)
    [alert] = wait_for(page, "#search-error:not([hidden])")
    assert "unavailable" in alert.text and "retry" in alert.text
    assert not page.find_element("id", "answer").is_displayed()


def test_a_plain_search_hides_the_previous_answer(page: Any) -> None:
    _ask(page, QUESTION)
    wait_for(page, "#answer .answer-text")
    run_search(page, "travel expenses receipts")
    wait_for(page, "#results li.result")
    assert not page.find_element("id", "answer").is_displayed()


def test_with_a_user_answers_form_a_thread_of_follow_ups(page: Any, fake_ollama: FakeOllamaServer) -> None:
    from selenium.webdriver.common.by import By

    # Given a user id on the page, when the user asks, then asks a follow-up
    user = page.find_element(By.ID, "user")
    user.clear()
    user.send_keys("ann")
    try:
        _ask(page, QUESTION)
        wait_for(page, "#answer .answer-text")
        wait_for(page, "#new-conversation")
        _ask(page, "can they be carried over?")
        wait_for(page, "#thread .thread-question")
        # Then the first exchange shows above the follow-up's answer, which came from the same conversation
        assert text_of(page, "#thread .thread-question") == QUESTION
        assert "five days" in text_of(page, "#answer .answer-text")
        assert "Searched: can they be carried over?" in text_of(page, "#answer")
        requests = fake_ollama.chat_requests()
        assert len(requests) == 3  # the answer, the follow-up's rewrite, its answer
        assert "<follow_up>" in requests[1].body["messages"][-1]["content"]
        # And "start a new conversation" ends the thread: the next question stands alone
        page.find_element(By.ID, "new-conversation").click()
        _ask(page, QUESTION)
        wait_for(page, "#answer .answer-text")
        assert page.find_elements(By.CSS_SELECTOR, "#thread .thread-turn") == []
        assert len(fake_ollama.chat_requests()) == 4
    finally:
        user.clear()
