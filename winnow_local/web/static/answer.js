// The search page's "Answer" button. Lambda cannot stream, so the page gets a fast first result the way
// docs/answers.md advises: POST /search shows the passages at once, then POST /answer with the same body
// writes the answer above them. Its [n] markers link to the passage of rank n. textContent only.
// With a user id the answers form a thread (docs/conversations.md): the next Answer is a follow-up in the
// same conversation, sent straight to /answer (alone, a follow-up would preview the wrong passages).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const api = () => window.winnowPage;
  const thread = { id: null, turns: [] };

  function newConversation() {
    thread.id = null;
    thread.turns = [];
  }

  // The earlier questions and answers of the conversation, above the current answer.
  function threadList() {
    const element = api().element;
    const list = element("ol", "thread");
    list.id = "thread";
    for (const turn of thread.turns.slice(0, -1)) {
      const item = element("li", "thread-turn");
      item.appendChild(element("p", "thread-question", turn.question));
      item.appendChild(element("p", "thread-answer", turn.answer || "(no answer)"));
      list.appendChild(item);
    }
    return list;
  }

  function showError(message) {
    const box = $("search-error");
    box.textContent = message;
    box.hidden = false;
  }

  async function post(path, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: api().headers({ "content-type": "application/json" }),
      body: JSON.stringify(body),
    });
    return { response, payload: await api().readJson(response) };
  }

  // Each rendered passage gets id result-<rank>, the target of the answer's citation links.
  function labelResults(results) {
    const items = document.querySelectorAll("#results > li.result");
    results.forEach((result, index) => {
      if (items[index]) items[index].id = `result-${result.rank}`;
    });
  }

  function showResult(rank) {
    const target = $(`result-${rank}`);
    if (!target) return;
    for (const old of document.querySelectorAll("#results .cited-target")) old.classList.remove("cited-target");
    target.classList.add("cited-target");
    target.setAttribute("tabindex", "-1");
    target.scrollIntoView({ block: "start" });
    target.focus({ preventScroll: true });
  }

  function renderAnswer(payload) {
    const box = $("answer");
    const element = api().element;
    box.replaceChildren(threadList(), element("h3", "answer-heading", "Answer"));
    box.hidden = false;
    if (payload.query_used && payload.query_used !== payload.query) {
      box.appendChild(element("p", "answer-meta", `Searched: ${payload.query_used}`));
    }
    if (payload.answer === null || payload.answer === undefined) {
      box.appendChild(element("p", "answer-none", payload.message || "No relevant passages found"));
      return;
    }
    const cited = new Set((payload.citations || []).map((c) => c.rank));
    const text = element("p", "answer-text");
    const marker = /\[(\d+)\]/g;
    let last = 0;
    let match;
    while ((match = marker.exec(payload.answer)) !== null) {
      text.appendChild(document.createTextNode(payload.answer.slice(last, match.index)));
      const rank = Number(match[1]);
      if (cited.has(rank)) {
        const link = element("a", "cite", `[${rank}]`);
        link.href = `#result-${rank}`;
        link.setAttribute("aria-label", `source ${rank}`);
        link.addEventListener("click", (event) => {
          event.preventDefault();
          showResult(rank);
        });
        text.appendChild(link);
      } else {
        text.appendChild(document.createTextNode(match[0]));
      }
      last = marker.lastIndex;
    }
    text.appendChild(document.createTextNode(payload.answer.slice(last)));
    box.appendChild(text);
    const usage = payload.usage || {};
    const total = payload.timings_ms && payload.timings_ms.total;
    box.appendChild(
      element(
        "p",
        "answer-meta",
        `${payload.message} · ${payload.model} · ${usage.input_tokens} + ${usage.output_tokens} tokens` +
          (typeof total === "number" ? ` · ${Math.round(total)} ms` : ""),
      ),
    );
    if (thread.id) {
      const more = element("p", "answer-meta", "Ask a follow-up and press Answer, or ");
      const restart = element("button", "secondary", "start a new conversation");
      restart.type = "button";
      restart.id = "new-conversation";
      restart.addEventListener("click", () => {
        newConversation();
        box.hidden = true;
      });
      more.appendChild(restart);
      box.appendChild(more);
    }
  }

  function remember(payload) {
    if (!payload.conversation_id) return; // anonymous: every answer stands alone
    thread.id = payload.conversation_id;
    thread.turns.push({ question: payload.query, answer: payload.answer });
  }

  async function answer() {
    $("search-error").hidden = true;
    let body;
    try {
      body = api().searchBody();
    } catch (error) {
      showError(error.message);
      return;
    }
    if (!$("query").reportValidity()) return;
    const box = $("answer");
    box.replaceChildren(api().element("p", "answer-pending", "Searching…"));
    box.hidden = false;
    $("answer-button").disabled = true;
    $("search-button").disabled = true;
    try {
      if (thread.id) {
        body.conversation_id = thread.id;
        box.replaceChildren(api().element("p", "answer-pending", "Writing an answer…"));
        const followed = await post("/answer", body);
        if (!followed.response.ok) {
          box.hidden = true;
          showError(api().errorMessage(followed.payload, followed.response));
          return;
        }
        remember(followed.payload);
        api().renderResults(followed.payload);
        labelResults(followed.payload.results || []);
        renderAnswer(followed.payload);
        return;
      }
      const searched = await post("/search", body);
      if (!searched.response.ok) {
        box.hidden = true;
        showError(api().errorMessage(searched.payload, searched.response));
        return;
      }
      api().renderResults(searched.payload);
      labelResults(searched.payload.results || []);
      if (!(searched.payload.results || []).length) {
        box.hidden = true; // /answer would call no model; the results list already says nothing was found
        return;
      }
      box.replaceChildren(api().element("p", "answer-pending", "Writing an answer…"));
      const answered = await post("/answer", body);
      if (!answered.response.ok) {
        box.hidden = true;
        showError(api().errorMessage(answered.payload, answered.response));
        return;
      }
      remember(answered.payload);
      api().renderResults(answered.payload); // the passages the answer cites, by the ranks it cites
      labelResults(answered.payload.results || []);
      renderAnswer(answered.payload);
    } catch (error) {
      box.hidden = true;
      showError(`The server did not answer: ${error.message}`);
    } finally {
      $("answer-button").disabled = false;
      $("search-button").disabled = false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("answer-button").addEventListener("click", answer);
    $("search-form").addEventListener("submit", () => {
      $("answer").hidden = true; // a plain search: the previous answer no longer belongs to the results
      newConversation();
    });
  });
})();
