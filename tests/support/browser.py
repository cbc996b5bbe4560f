"""Headless Chromium for the page tests: ``chromium`` (one per test process), the ``browser`` fixture (that
browser reset for each module) and the few steps every page test takes: wait for an element, run a
search, read an element's text."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


def find_program(*names: str) -> str:
    for name in names:
        found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").is_file() else None)
        if found:
            return found
    pytest.fail(
        f"{' or '.join(names)} is not installed: `make test` installs Debian's chromium and chromium-driver "
        "(apt-get install chromium chromium-driver)"
    )


WINDOW = (1280, 1000)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium per test process: starting it costs seconds, and a page test leaves nothing
    behind that the next module's ``browser`` does not reset."""
    chromium = find_program("chromium", "chromium-browser")
    chromedriver = find_program("chromedriver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def fresh_page(driver: Any, width: int = WINDOW[0], height: int = WINDOW[1]) -> Any:
    """The session's browser as a new module finds it: a blank page of the given window size, no
    cookies, the default script timeout. Each module's server has its own port, so its own origin and
    storage."""
    driver.get("about:blank")
    driver.delete_all_cookies()
    driver.set_window_size(width, height)
    driver.set_script_timeout(30)
    return driver


@pytest.fixture(scope="module")
def browser(chromium: Any) -> Any:
    """The session's Chromium, reset for this module (``fresh_page``)."""
    return fresh_page(chromium)


def wait_for(driver: Any, css: str, timeout: float = 60) -> list[Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.find_elements(By.CSS_SELECTOR, css))
    found: list[Any] = driver.find_elements(By.CSS_SELECTOR, css)
    return found


def until(driver: Any, condition: Callable[[Any], Any], timeout: float = 30) -> Any:
    """Wait for a condition that reads elements the page may re-render meanwhile (the documents list
    refreshes itself): a stale element means "not yet", never a failure."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(
        condition
    )


def run_search(driver: Any, query: str) -> None:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "query")
    box.clear()
    box.send_keys(query)
    driver.find_element(By.ID, "search-button").click()


def text_of(element: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(element.find_element(By.CSS_SELECTOR, css).text)
