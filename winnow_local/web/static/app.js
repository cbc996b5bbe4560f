// Winnow's local search page: plain JavaScript against the same API the deployed service exposes.
// Every value from the server is rendered with textContent, never as HTML.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const TENANT_KEY = "winnow.tenant";

  function tenant() {
    return $("tenant").value.trim() || "default";
  }

  // Who is asking, as a token's claims would say: sent only when filled in (empty: anonymous).
  function headers(extra) {
    const who = { "x-winnow-tenant": tenant() };
    const user = $("user") ? $("user").value.trim() : "";
    const groups = $("groups") ? $("groups").value.trim() : "";
    if (user) who["x-winnow-user"] = user;
    if (groups) who["x-winnow-groups"] = groups;
    return Object.assign(who, extra || {});
  }

  // A restricted result says so; who may read it only comes back to those who may change it.
  function accessBadge(result) {
    const badge = element("span", "access-badge", "Restricted");
    const access = result.access;
    const names = [];
    if (access && access.users && access.users.length) names.push(`users ${access.users.join(", ")}`);
    if (access && access.groups && access.groups.length) names.push(`groups ${access.groups.join(", ")}`);
    if (access) badge.textContent = `Restricted to ${names.length ? names.join("; ") : "the admins"}`;
    badge.title = "This document has an access list: not every member of the tenant can find it.";
    return badge;
  }

  async function readJson(response) {
    const text = await response.text();
    try {
      return text ? JSON.parse(text) : null;
    } catch (error) {
      return { error: { message: text || `HTTP ${response.status}` } };
    }
  }

  function errorMessage(payload, response) {
    if (payload && payload.error && payload.error.message) return payload.error.message;
    return `HTTP ${response.status}`;
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function documentName(key) {
    const prefix = tenant() + "/";
    return key && key.startsWith(prefix) ? key.slice(prefix.length) : key || "";
  }

  // --- filters ------------------------------------------------------------------------------------
  function addFilterRow() {
    const row = $("filter-row-template").content.firstElementChild.cloneNode(true);
    row.querySelector(".remove-filter").addEventListener("click", () => row.remove());
    $("filter-rows").appendChild(row);
    row.querySelector(".filter-field").focus();
  }

  function typed(value) {
    const text = value.trim();
    if (/^".*"$|^'.*'$/.test(text) && text.length >= 2) return text.slice(1, -1);
    if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return Number(text);
    if (text === "true" || text === "false") return text === "true";
    return text;
  }

  // Rows become the API's filters object: repeated fields → any-of lists, ≥/≤ → {gte, lte}.
  function collectFilters() {
    const filters = {};
    for (const row of document.querySelectorAll("#filter-rows .filter-row")) {
      const field = row.querySelector(".filter-field").value.trim();
      const op = row.querySelector(".filter-op").value;
      const raw = row.querySelector(".filter-value").value;
      if (!field && !raw.trim()) continue;
      if (!field || !raw.trim()) throw new Error("Each filter needs a field and a value.");
      if (op === "eq") {
        const value = typed(raw);
        const current = filters[field];
        if (current === undefined) filters[field] = value;
        else if (Array.isArray(current)) current.push(value);
        else if (typeof current === "object") throw new Error(`${field} already has a range.`);
        else filters[field] = [current, value];
      } else {
        const bound = typed(raw);
        if (typeof bound !== "number") throw new Error(`${field}: a range needs a number.`);
        const current = filters[field];
        if (current !== undefined && (typeof current !== "object" || Array.isArray(current))) {
          throw new Error(`${field} already has a value.`);
        }
        filters[field] = Object.assign(current || {}, { [op]: bound });
      }
    }
    return filters;
  }

  // --- search -------------------------------------------------------------------------------------
  function searchBody() {
    const body = { query: $("query").value, mode: $("mode").value, context: $("context").value };
    const topK = $("top-k").value.trim();
    if (topK) body.top_k = Number(topK);
    const threshold = $("threshold").value.trim();
    if (threshold) body.relevance_threshold = Number(threshold);
    if (!$("rerank").disabled && !$("rerank").checked) body.rerank = false;
    const filters = collectFilters();
    if (Object.keys(filters).length) body.filters = filters;
    return body;
  }

  function citationParts(result) {
    const parts = [];
    parts.push({ cls: "doc", label: "Document", text: documentName(result.key) });
    if (result.page !== null && result.page !== undefined) {
      parts.push({ cls: "page", label: "Page", text: String(result.page) });
    }
    if (result.section) parts.push({ cls: "section", label: "Section", text: result.section });
    parts.push({ cls: "score", label: "Score", text: Number(result.score).toFixed(3) });
    return parts;
  }

  // A table passage is "caption", "Columns: a | b", then one row a line as "a: 1 | b: 2" pairs
  // (winnow/text/tables.py): a "|" inside a cell is written "\|", so pairs split at " | "; a column
  // name holds no ": " (a no-break space stands in for its space), so a pair's name ends at its first
  // ": ". Names are unique; a name missing from a shortened column line is added from the rows.
  function tableCells(line) {
    return line.split(" | ").map((cell) => cell.replaceAll("\\|", "|"));
  }

  function columnLabel(name) {
    return name.replaceAll(":\u00a0", ": ");
  }

  // The result's highlighted rows (winnowHighlight, highlight.js) are marked.
  function tablePassage(text, highlight) {
    const lines = text.split("\n");
    const at = lines.findIndex((line) => line.startsWith("Columns: "));
    if (at < 0) {
      // a table without column names
      return passage(text, highlight, (piece) => piece.replaceAll("\\|", "|"));
    }
    const columns = tableCells(lines[at].slice("Columns: ".length));
    const marked = new Set();
    for (const line of window.winnowHighlight.markedLines(text, highlight)) {
      if (line > at) marked.add(line - at - 1);
    }
    return tableBox(lines.slice(0, at).join(" "), columns, lines.slice(at + 1), "passage passage-table", marked);
  }

  // A prose passage, its highlighted sentences in <mark>.
  function passage(text, highlight, show) {
    const part = element("p", "passage");
    part.appendChild(window.winnowHighlight.marked(text, highlight, show));
    return part;
  }

  // A table of "a: 1 | b: 2" row lines under `columns` (a name missing there is added from the rows),
  // in a box of its own: a wide table scrolls inside it, the page never sideways (on a phone, each row
  // is a block of "column: value" lines, style.css). The rows numbered in `marked` have their cells in
  // <mark>.
  function tableBox(caption, columns, rowLines, className, marked) {
    const rows = [];
    for (const line of rowLines) {
      const cells = new Map();
      for (const pair of tableCells(line)) {
        const cut = pair.indexOf(": ");
        const name = cut < 0 ? "" : pair.slice(0, cut);
        if (!columns.includes(name)) columns.push(name);
        cells.set(name, cut < 0 ? pair : pair.slice(cut + 2));
      }
      rows.push(cells);
    }
    const table = element("table", className);
    if (caption) table.appendChild(element("caption", "", caption));
    const head = element("tr", "");
    for (const name of columns) head.appendChild(element("th", "", columnLabel(name)));
    const thead = element("thead", "");
    thead.appendChild(head);
    table.appendChild(thead);
    const body = element("tbody", "");
    for (const [number, cells] of rows.entries()) {
      const highlighted = Boolean(marked && marked.has(number));
      const row = element("tr", highlighted ? "highlighted" : "");
      for (const name of columns) {
        const value = cells.get(name) || "";
        const cell = highlighted && value ? element("td", "") : element("td", "", value);
        if (highlighted && value) cell.appendChild(element("mark", "", value));
        cell.dataset.label = columnLabel(name);
        row.appendChild(cell);
      }
      body.appendChild(row);
    }
    table.appendChild(body);
    const box = element("div", "table-scroll");
    box.tabIndex = 0;
    box.setAttribute("role", "region");
    box.setAttribute("aria-label", "Table (scrolls sideways when wide)");
    box.appendChild(table);
    return box;
  }

  // A line of a table passage's rows: "name: value" pairs joined by " | " (a context cut mid-row
  // starts with a piece that is not a pair: that piece stays prose).
  function isRowLine(line) {
    const pieces = tableCells(line);
    return pieces.length > 1 && pieces.every((piece) => {
      const cut = piece.indexOf(": ");
      return cut > 0 && cut <= 80;
    });
  }

  // The document's text around a passage (the request's `context`), dimmed: it is not the passage.
  // Around a table it is often more of the table: its rows are drawn as a table too.
  function contextPart(cls, label, text) {
    const lines = text.split("\n");
    if (!lines.some((line) => line.startsWith("Columns: ") || isRowLine(line))) {
      const part = element("p", `context ${cls}`, text);
      part.setAttribute("aria-label", label);
      return part;
    }
    const part = element("div", `context context-table ${cls}`);
    part.setAttribute("role", "group");
    part.setAttribute("aria-label", label);
    let prose = [];
    let rows = [];
    let columns = [];
    let caption = "";
    const flushProse = () => {
      if (prose.length) part.appendChild(element("p", "", prose.join("\n")));
      prose = [];
    };
    const flushRows = () => {
      if (rows.length) part.appendChild(tableBox(caption, columns, rows, "passage-table"));
      rows = [];
      columns = [];
      caption = "";
    };
    for (const line of lines) {
      if (line.startsWith("Columns: ")) {
        flushRows();
        if (prose.length) caption = prose.pop(); // the caption line stands just above the columns
        flushProse();
        columns = tableCells(line.slice("Columns: ".length));
      } else if (isRowLine(line)) {
        flushProse();
        rows.push(line);
      } else {
        flushRows();
        prose.push(line);
      }
    }
    flushRows();
    flushProse();
    return part;
  }

  // A figure's image as a thumbnail that opens the full image. This server's own signed link is used
  // by its path, so it loads from whichever host name the page was opened with (the page's policy
  // allows images from itself only); an S3 presigned link is used as it is.
  function figureThumbnail(result) {
    let source = result.image_url;
    try {
      const url = new URL(source, window.location.href);
      if (url.pathname === "/local/figures") source = url.pathname + url.search;
    } catch (error) {
      return element("span", "", "");
    }
    const link = element("a", "figure-link");
    link.href = source;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    const image = element("img", "figure-thumbnail");
    image.src = source;
    image.alt = (result.text || "").split("\n")[0];
    image.loading = "lazy";
    link.appendChild(image);
    return link;
  }

  function renderResults(payload) {
    const list = $("results");
    list.replaceChildren();
    const results = payload.results || [];
    if (!results.length) {
      const empty = element("li", "nothing-relevant", payload.message || "No relevant passages found.");
      list.appendChild(empty);
      $("search-status").textContent = ""; // the list says it; once is enough
      return;
    }
    const total = payload.timings_ms && payload.timings_ms.total;
    $("search-status").textContent =
      `${results.length} passage${results.length === 1 ? "" : "s"}` +
      (typeof total === "number" ? ` in ${Math.round(total)} ms` : "");
    for (const result of results) {
      const item = element("li", "result");
      const title = element("h3", "result-title", result.title || documentName(result.key));
      item.appendChild(title);
      const context = result.context || { before: "", after: "" };
      if (context.before) item.appendChild(contextPart("context-before", "Text before", context.before));
      const text = result.text || "";
      item.appendChild(
        result.kind === "table" ? tablePassage(text, result.highlight) : passage(text, result.highlight),
      );
      if (context.after) item.appendChild(contextPart("context-after", "Text after", context.after));
      if (result.kind === "figure" && result.image_url) item.appendChild(figureThumbnail(result));
      const cite = element("p", "citation");
      if (result.ocr) {
        const badge = element("span", "ocr-badge", "OCR");
        badge.title = "Read from a scanned page or image by OCR: words may be misread.";
        cite.appendChild(badge);
      }
      if (result.restricted) cite.appendChild(accessBadge(result));
      for (const part of citationParts(result)) {
        const span = element("span", part.cls);
        span.appendChild(element("span", "label", part.label + ": "));
        span.appendChild(document.createTextNode(part.text));
        cite.appendChild(span);
      }
      item.appendChild(cite);
      list.appendChild(item);
    }
  }

  async function search(event) {
    event.preventDefault();
    const errorBox = $("search-error");
    errorBox.hidden = true;
    let body;
    try {
      body = searchBody();
    } catch (error) {
      errorBox.textContent = error.message;
      errorBox.hidden = false;
      return;
    }
    $("search-button").disabled = true;
    $("search-status").textContent = "Searching…";
    $("results").setAttribute("aria-busy", "true");
    try {
      const response = await fetch("/search", {
        method: "POST",
        headers: headers({ "content-type": "application/json" }),
        body: JSON.stringify(body),
      });
      const payload = await readJson(response);
      if (!response.ok) {
        $("results").replaceChildren();
        $("search-status").textContent = "";
        errorBox.textContent = errorMessage(payload, response);
        errorBox.hidden = false;
        return;
      }
      renderResults(payload);
    } catch (error) {
      $("search-status").textContent = "";
      errorBox.textContent = `The server did not answer: ${error.message}`;
      errorBox.hidden = false;
    } finally {
      $("search-button").disabled = false;
      $("results").removeAttribute("aria-busy");
    }
  }

  // --- documents ----------------------------------------------------------------------------------
  async function loadDocuments() {
    const tbody = document.querySelector("#documents tbody");
    const status = $("documents-status");
    status.textContent = "Loading…";
    const rows = [];
    let cursor = null;
    try {
      do {
        const query = new URLSearchParams({ limit: "100" });
        if (cursor) query.set("cursor", cursor);
        const response = await fetch(`/documents?${query}`, { headers: headers() });
        const payload = await readJson(response);
        if (!response.ok) throw new Error(errorMessage(payload, response));
        rows.push(...(payload.documents || []));
        cursor = payload.next_cursor;
      } while (cursor);
    } catch (error) {
      status.textContent = `Could not list documents: ${error.message}`;
      return;
    }
    tbody.replaceChildren();
    for (const doc of rows) {
      const tr = element("tr", `document status-${doc.status}`);
      const name = element("td", "doc");
      name.appendChild(breakableName(documentName(doc.key)));
      if (doc.error) name.appendChild(element("span", "doc-error", doc.error));
      tr.appendChild(name);
      const statusCell = element("td", "doc-status");
      statusCell.appendChild(element("span", `badge ${doc.status}`, doc.status));
      tr.appendChild(statusCell);
      tr.appendChild(element("td", "num", doc.chunks));
      tr.appendChild(element("td", "updated", shortTime(doc.updated_at)));
      const actions = element("td", "doc-actions");
      if (doc.status !== "deleted") {
        const button = element("button", "delete-document quiet-danger", "Delete");
        button.type = "button";
        button.dataset.key = doc.key;
        button.setAttribute("aria-label", `Delete ${documentName(doc.key)}`);
        button.addEventListener("click", () => deleteDocument(doc.key, button));
        actions.appendChild(button);
      }
      tr.appendChild(actions);
      tbody.appendChild(tr);
    }
    // Deleted documents are listed (their status matters) but are no longer documents of the tenant.
    const deleted = rows.filter((doc) => doc.status === "deleted").length;
    const live = rows.length - deleted;
    status.textContent = live
      ? `${live} document${live === 1 ? "" : "s"} for tenant ${tenant()}` +
        (deleted ? ` (and ${deleted} deleted)` : "")
      : `No documents for tenant ${tenant()} yet: add some above, or run winnow ingest.`;
  }

  // A file name that may wrap after "/", "-", "_" or "." (a <wbr> there), never inside a word.
  function breakableName(name) {
    const fragment = document.createDocumentFragment();
    for (const part of name.split(/(?<=[\/\-_.])/)) {
      if (fragment.childNodes.length) fragment.appendChild(document.createElement("wbr"));
      fragment.appendChild(document.createTextNode(part));
    }
    return fragment;
  }

  // "2024-05-01T12:34:56.789+00:00" → "2024-05-01 12:34" (UTC, as stored); anything else unchanged.
  function shortTime(value) {
    const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(value || "");
    return match ? `${match[1]} ${match[2]}` : value || "";
  }

  // --- upload -------------------------------------------------------------------------------------
  // "Done: 1 indexed, 1 failed." from the outcome of each file (a file count hid the failures).
  function uploadSummary(list) {
    const counts = new Map();
    for (const item of list.children) {
      const status = (Array.from(item.classList).find((c) => c.startsWith("status-")) || "status-failed")
        .slice("status-".length);
      counts.set(status, (counts.get(status) || 0) + 1);
    }
    const parts = Array.from(counts, ([status, n]) => `${n} ${status}`);
    return `Done: ${parts.join(", ")}.`;
  }

  // The same flow as a web app against the deployed API (docs/webapp.md): a signed form from /uploads,
  // the file posted with it, then the document's status until ingest has handled it.
  // The access list and metadata the form describes, as POST /uploads takes them (each left out when
  // empty); a metadata line that is not field=value is refused before anything is sent.
  function uploadDescription() {
    const names = (id) => $(id).value.split(",").map((name) => name.trim()).filter(Boolean);
    const described = {};
    const users = names("upload-users");
    const groups = names("upload-groups");
    if (users.length || groups.length) described.access = { users, groups };
    const metadata = {};
    for (const line of $("upload-metadata").value.split("\n")) {
      if (!line.trim()) continue;
      const cut = line.indexOf("=");
      if (cut <= 0) throw new Error(`metadata line ${JSON.stringify(line.trim())}: write field=value`);
      metadata[line.slice(0, cut).trim()] = line.slice(cut + 1).trim();
    }
    if (Object.keys(metadata).length) described.metadata = metadata;
    return described;
  }

  async function uploadOne(file, path, described) {
    const body = Object.assign({ path }, described || {});
    if (file.type) body.content_type = file.type;
    let response = await fetch("/uploads", {
      method: "POST",
      headers: headers({ "content-type": "application/json" }),
      body: JSON.stringify(body),
    });
    let payload = await readJson(response);
    if (response.status !== 201) throw new Error(errorMessage(payload, response));
    const form = new FormData();
    for (const [name, value] of Object.entries(payload.fields)) form.append(name, value);
    form.append("file", file);
    response = await fetch(payload.url, { method: "POST", body: form });
    if (!response.ok) throw new Error(errorMessage(await readJson(response), response));
    const statusUrl = `/documents/${encodeURIComponent(payload.key)}`;
    for (let attempt = 0; attempt < 120; attempt += 1) {
      response = await fetch(statusUrl, { headers: headers() });
      const doc = await readJson(response);
      if (response.ok && doc.status !== "pending") return doc;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    throw new Error("not indexed yet: check the document list later");
  }

  async function deleteDocument(key, button) {
    const name = documentName(key);
    if (!window.confirm(`Delete ${name}? Its file and its passages are removed; this cannot be undone.`)) {
      return;
    }
    button.disabled = true;
    const status = $("documents-status");
    try {
      const response = await fetch(`/documents/${encodeURIComponent(key)}`, {
        method: "DELETE",
        headers: headers(),
      });
      if (response.status !== 202) throw new Error(errorMessage(await readJson(response), response));
      status.textContent = `Deleted ${documentName(key)}.`;
    } catch (error) {
      status.textContent = `Could not delete ${documentName(key)}: ${error.message}`;
      button.disabled = false;
      return;
    }
    loadDocuments();
  }

  async function upload(event) {
    event.preventDefault();
    const files = Array.from($("upload-files").files || []);
    if (!files.length) return;
    let prefix = $("upload-prefix").value.trim().replace(/^\/+/, "");
    if (prefix && !prefix.endsWith("/")) prefix += "/";
    const list = $("upload-results");
    list.replaceChildren();
    let described;
    try {
      described = uploadDescription();
    } catch (error) {
      $("upload-status").textContent = `Nothing uploaded: ${error.message}`;
      return;
    }
    $("upload-button").disabled = true;
    let index = 0;
    for (const file of files) {
      index += 1;
      $("upload-status").textContent = `Indexing ${file.name} (${index} of ${files.length})…`;
      const item = element("li", "upload-result");
      try {
        const payload = await uploadOne(file, prefix + file.name, described);
        item.classList.add(`status-${payload.status}`);
        item.textContent = `${documentName(payload.key)}: ${payload.status}` +
          (payload.error ? ` — ${payload.error}` : ` (${payload.chunks} chunks)`);
      } catch (error) {
        item.classList.add("status-failed");
        item.textContent = `${file.name}: ${error.message}`;
      }
      list.appendChild(item);
    }
    $("upload-status").textContent = uploadSummary(list);
    $("upload-button").disabled = false;
    $("upload-form").reset();
    loadDocuments();
  }

  // --- wiring -------------------------------------------------------------------------------------
  document.addEventListener("DOMContentLoaded", () => {
    const saved = window.localStorage ? localStorage.getItem(TENANT_KEY) : null;
    const fromUrl = new URLSearchParams(window.location.search).get("tenant");
    if (fromUrl || saved) $("tenant").value = fromUrl || saved;
    $("tenant").addEventListener("change", () => {
      if (window.localStorage) localStorage.setItem(TENANT_KEY, tenant());
      $("results").replaceChildren();
      $("search-status").textContent = "";
      loadDocuments();
    });
    for (const id of ["user", "groups"]) $(id).addEventListener("change", loadDocuments);
    $("search-form").addEventListener("submit", search);
    $("add-filter").addEventListener("click", addFilterRow);
    $("refresh-documents").addEventListener("click", loadDocuments);
    $("upload-form").addEventListener("submit", upload);
    loadDocuments();
    loadConfig();
  });

  // What answer.js (the "Answer" button) reuses.
  window.winnowPage = { searchBody, renderResults, element, headers, readJson, errorMessage };

  // Re-rank is offered (and ticked, as the API's default) only when the server has a re-ranker, and
  // "Answer" only when it has an answer model.
  async function loadConfig() {
    try {
      const response = await fetch("/local/config");
      const config = await readJson(response);
      if (response.ok && config && config.answers) $("answer-button").hidden = false;
      if (response.ok && config && config.reranker) {
        $("rerank").disabled = false;
        $("rerank").checked = true;
        $("rerank-help").textContent = `${config.reranker} re-orders the candidates`;
      }
    } catch (error) {
      // leave it off: the API's own default still applies
    }
  }
})();
