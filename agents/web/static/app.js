// skyjo-web page: plain JavaScript, no build step. Every rule, agent and search runs on
// the server (JSON API under /api/, docs/web.md); this file only draws and sends clicks.
"use strict";

const $ = (id) => document.getElementById(id);
let INFO = null;
const PLAY = { view: null, roundsSeen: 0, hint: null, busy: false };
const WATCH = { view: null, playing: false, timer: null, busy: false, hint: null };

// --- helpers ------------------------------------------------------------------------------

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["content-type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    const problem = (data && data.error) || { message: response.statusText, field: null };
    const error = new Error(problem.message);
    error.field = problem.field;
    error.status = response.status;
    throw error;
  }
  return data;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setStatus(text, isError) {
  const status = $("status");
  status.textContent = text || "";
  status.className = isError ? "error" : "";
}

function intOrNull(text) {
  const value = String(text).trim();
  return value === "" ? null : Number(value);
}

function percent(p) {
  return p === null || p === undefined ? "–" : `${Math.round(100 * p)}%`;
}

function signed(x, digits) {
  if (x === null || x === undefined) return "–";
  return (x >= 0 ? "+" : "") + x.toFixed(digits);
}

// --- cards and the table ----------------------------------------------------------------------

function cardColour(value) {
  if (value < 0) return "neg";
  if (value === 0) return "zero";
  if (value <= 4) return "low";
  if (value <= 8) return "mid";
  return "high";
}

function card(cell, extra) {
  const attrs = Object.assign({}, extra || {});
  if (cell.state === "cleared") {
    attrs.class = "card cleared " + (attrs.class || "");
    return el("div", attrs);
  }
  if (cell.value === null || cell.value === undefined) {
    attrs.class = "card back " + (attrs.class || "");
    return el("div", attrs, el("span", { class: "logo" }, "SKYJO"));
  }
  const peek = cell.state === "hidden" ? " peek" : "";
  attrs.class = `card ${cardColour(cell.value)}${peek} ` + (attrs.class || "");
  return el("div", attrs, el("span", { class: "value" }, cell.value));
}

// Which element of the table each legal action is: own slots, the piles.
function legalTargets(view) {
  const targets = { slots: {}, draw: null, discard: null, discardDrawn: null };
  for (const entry of view.legal || []) {
    if (entry.kind === "reveal" || entry.kind === "place") targets.slots[entry.slot] = entry;
    else if (entry.kind === "draw") targets.draw = entry;
    else if (entry.kind === "take_discard") targets.discard = entry;
    else if (entry.kind === "discard_drawn") targets.discardDrawn = entry;
  }
  return targets;
}

function clickable(entry, onAction, attrs) {
  if (!entry) return attrs;
  return Object.assign(attrs, {
    class: (attrs.class || "") + " legal",
    title: entry.text,
    "data-action": entry.action,
    onclick: () => onAction(entry.action),
  });
}

function renderTable(container, view, options) {
  const opts = options || {};
  const onAction = opts.onAction || (() => {});
  const targets = legalTargets(view);
  const rows = view.rules.rows, cols = view.rules.cols;
  container.innerHTML = "";
  const center = el("div", { class: "piles" });
  center.append(el("div", { class: "pile" },
    card({ state: "hidden", value: null }, clickable(targets.draw, onAction, { id: opts.prefix + "-draw-pile" })),
    el("div", { class: "pile-label" }, `draw pile (${view.draw_size})`)));
  const top = view.discard_top === null ? { state: "cleared" } : { state: "up", value: view.discard_top };
  const discardEntry = targets.discard || targets.discardDrawn;
  center.append(el("div", { class: "pile" },
    card(top, clickable(discardEntry, onAction, { id: opts.prefix + "-discard-pile" })),
    el("div", { class: "pile-label" }, `discard (${view.discard_size})`)));
  if (view.held_from) {
    const holder = view.seats[view.current_seat];
    const holderName = !holder ? "?" : holder.kind === "human" ? "You hold" : `${holder.name} holds`;
    const held = view.held_card === null ? { state: "hidden", value: null } : { state: "up", value: view.held_card };
    center.append(el("div", { class: "pile held" }, card(held, { id: opts.prefix + "-held-card" }),
      el("div", { class: "pile-label" }, `${holderName} (${view.held_from === "draw" ? "drawn" : "from the discard"})`)));
    if (targets.discardDrawn) {
      center.append(el("button", { id: opts.prefix + "-discard-drawn", type: "button", class: "legal-button",
        onclick: () => onAction(targets.discardDrawn.action) }, "Discard it"));
    }
  }
  const info = el("div", { class: "round-info" },
    view.over ? "Game over" : `Round ${view.round}`,
    view.finisher !== null ? ` · seat ${view.finisher} has gone out: last turns` : "",
    ` · target ${view.rules.target_score}`);
  center.append(info);
  container.append(center);

  const seats = el("div", { class: "seats" });
  const order = view.seats.map((s) => s.seat);
  if (view.human_seat !== null) {  // your seat first
    order.sort((a, b) => (a === view.human_seat ? -1 : b === view.human_seat ? 1 : a - b));
  }
  for (const index of order) {
    const seat = view.seats[index];
    const mine = index === view.human_seat;
    const toAct = index === view.current_seat;
    const grid = el("div", { class: "grid", style: `grid-template-columns: repeat(${cols}, auto)` });
    for (const cell of seat.grid) {
      let attrs = { "data-slot": cell.slot };
      if (mine) attrs = clickable(targets.slots[cell.slot], onAction, attrs);
      const node = card(cell, attrs);
      if (mine && opts.odds && opts.odds.slots) {
        const chance = opts.odds.slots[cell.slot];
        if (chance && chance.p_draw_beats !== null) {
          node.append(el("span", { class: "odds-badge", title: "chance a drawn card is lower" }, percent(chance.p_draw_beats)));
        }
      }
      grid.append(node);
    }
    const last = seat.last_move ? seat.last_move.text : "no move yet";
    seats.append(el("div", { class: `seat${mine ? " mine" : ""}${toAct ? " to-act" : ""}`, "data-seat": index },
      el("div", { class: "seat-head" },
        el("b", {}, mine ? "You" : seat.name), ` · seat ${index}`,
        toAct && !view.over ? el("span", { class: "badge" }, "to act") : null),
      el("div", { class: "seat-scores" }, `total ${seat.total} · showing ${seat.visible_sum}`),
      grid,
      el("div", { class: "last-move" }, last)));
  }
  container.append(seats);
  if (rows && view.notices && view.notices.length) {
    container.append(el("div", { class: "notice" }, view.notices.join(" ")));
  }
}

function renderMoves(list, view) {
  list.innerHTML = "";
  const moves = view.moves.slice(-20).reverse();
  for (const move of moves) {
    const who = view.seats[move.seat];
    list.append(el("li", { value: move.index + 1 }, `${who.kind === "human" ? "You" : who.name} ${move.text}`));
  }
}

function roundTable(result, view) {
  const table = el("table", { class: "scores" },
    el("tr", {}, el("th", {}, "seat"), el("th", {}, "cards"), el("th", {}, "round"), el("th", {}, "total")));
  result.totals.forEach((total, seat) => {
    const name = view.seats[seat].kind === "human" ? "You" : view.seats[seat].name;
    const penalty = result.penalised[seat] ? " (finisher penalty)" : "";
    const out = seat === result.finisher ? " · went out" : "";
    table.append(el("tr", {}, el("td", {}, `${name}${out}`), el("td", {}, result.raw_scores[seat]),
      el("td", {}, `${result.scores[seat]}${penalty}`), el("td", {}, total)));
  });
  return table;
}

function finalGrids(result, view) {
  const box = el("div", { class: "final-grids" });
  result.grids.forEach((grid, seat) => {
    const node = el("div", { class: "grid small", style: `grid-template-columns: repeat(${view.rules.cols}, auto)` });
    grid.forEach((cell) => node.append(card(cell)));
    box.append(el("div", {}, el("div", {}, view.seats[seat].kind === "human" ? "You" : view.seats[seat].name), node));
  });
  return box;
}

// --- modal ---------------------------------------------------------------------------------------

let modalDone = null;
function showModal(content, button, onClose) {
  $("modal-body").innerHTML = "";
  $("modal-body").append(content);
  $("modal-close").textContent = button || "Continue";
  modalDone = onClose || null;
  $("modal").classList.remove("hidden");
}
$("modal-close").addEventListener("click", () => {
  $("modal").classList.add("hidden");
  const done = modalDone;
  modalDone = null;
  if (done) done();
});

// --- hints ---------------------------------------------------------------------------------------

function renderHint(container, hint, onPick) {
  container.innerHTML = "";
  if (!hint) return;
  const head = hint.searched
    ? `Search over ${hint.base}: ${hint.samples} sampled deals, ${Math.round(hint.elapsed_ms)} ms`
    : `${hint.base}'s choice (the search does not decide initial reveals)`;
  container.append(el("div", { class: "hint-head" }, head));
  const table = el("table", { class: "hint-table" },
    el("tr", {}, el("th", {}, "move"), el("th", {}, "value ± error"), el("th", {}, "network")));
  for (const move of hint.moves) {
    let value = "–";
    if (move.value !== null) value = move.network_choice ? move.value.toFixed(3) : `${move.value.toFixed(3)} ± ${move.error.toFixed(3)}`;
    const marks = (move.recommended ? "★ " : "") + (move.network_choice ? "● " : "");
    const row = el("tr", { class: "hint-row" + (move.recommended ? " best" : ""), "data-action": move.action,
      title: onPick ? "click to play this move" : "" },
      el("td", {}, marks + move.text), el("td", {}, value), el("td", {}, percent(move.probability)));
    if (onPick) row.addEventListener("click", () => onPick(move.action));
    table.append(row);
  }
  container.append(table);
  if (hint.searched) {
    container.append(el("div", { class: "legend" },
      `★ advised, ● the network's own move. Value: ${hint.unit}; error: standard error of the difference with the network's move on the same deals.`));
  }
  if (hint.odds) container.append(renderOdds(hint.odds));
}

function renderOdds(odds) {
  const box = el("div", { class: "odds" }, el("h4", {}, "Odds"));
  const lines = [
    `Unseen cards: ${odds.unseen_total}, mean ${odds.mean_unseen === null ? "–" : odds.mean_unseen.toFixed(2)}`,
    `A drawn card is lower than the discard top: ${percent(odds.p_draw_beats_discard)}`,
  ];
  if (odds.held_card !== undefined) {
    lines.push(`The held ${odds.held_card} is lower than a face-down card: ${percent(odds.p_held_beats_hidden)}`);
  }
  for (const line of lines) box.append(el("div", {}, line));
  const bars = el("div", { class: "unseen-bars" });
  const most = Math.max(1, ...odds.unseen.map((entry) => entry.count));
  for (const { value, count } of odds.unseen) {
    bars.append(el("div", { class: "bar", title: `${count} unseen ${value}s` },
      el("div", { class: `fill ${cardColour(value)}`, style: `height: ${Math.round(40 * count / most)}px` }),
      el("div", { class: "bar-label" }, value)));
  }
  box.append(bars);
  return box;
}

// --- play ----------------------------------------------------------------------------------------

const PROMPTS = {
  initial_reveal: "Turn up one of your cards.",
  choose_source: "Draw from the draw pile, or take the discard top.",
  place_drawn: "Swap the drawn card into a slot, or discard it.",
  place_discard: "Swap the card you took into a slot.",
  reveal_after_discard: "Turn up one of your face-down cards.",
};

function showPlay(view) {
  PLAY.view = view;
  const odds = PLAY.hint && PLAY.hint.move === view.cursor ? PLAY.hint.odds : null;
  renderTable($("play-table"), view, { prefix: "play", onAction: playMove, odds });
  renderMoves($("play-moves"), view);
  $("play-prompt").textContent = view.over ? "Game over." : view.your_turn ? PROMPTS[view.phase] || "" : "The agents are playing…";
  $("hint-button").disabled = !view.your_turn;
  if (!PLAY.hint || PLAY.hint.move !== view.cursor) renderHint($("play-hint"), null);
  const results = view.round_results;
  if (results.length > PLAY.roundsSeen) {
    PLAY.roundsSeen = results.length;
    const result = results[results.length - 1];
    const box = el("div", { id: "round-result" }, el("h2", {}, `Round ${result.round} scored`),
      roundTable(result, view), finalGrids(result, view));
    if (view.over) box.append(gameOverNote(view));
    showModal(box, view.over ? "Close" : "Continue");
  } else if (view.over && $("modal").classList.contains("hidden") && !$("game-over")) {
    showModal(gameOverNote(view), "Close");
  }
}

function gameOverNote(view) {
  let text;
  if (view.truncated) text = "The game was stopped by the turn cap: nobody wins.";
  else if (view.winners.length === 1 && view.winners[0] === view.human_seat) text = "You win!";
  else if (view.winners.includes(view.human_seat)) text = "A shared win!";
  else text = `${view.winners.map((s) => view.seats[s].name + " (seat " + s + ")").join(", ")} won.`;
  const totals = view.seats.map((s) => `${s.kind === "human" ? "You" : s.name} ${s.total}`).join(" · ");
  return el("div", { id: "game-over" }, el("h2", {}, "Game over"), el("p", {}, text), el("p", {}, totals));
}

async function playMove(action) {
  if (PLAY.busy || !PLAY.view) return;
  PLAY.busy = true;
  setStatus("…");
  try {
    showPlay(await api("POST", `/api/games/${PLAY.view.id}/moves`, { action }));
    setStatus("");
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    PLAY.busy = false;
  }
}

async function askHint() {
  const view = PLAY.view;
  if (!view || !view.your_turn) return;
  $("hint-button").disabled = true;
  $("play-hint").innerHTML = "";
  $("play-hint").append(el("div", { class: "thinking" }, "Searching…"));
  try {
    const hint = await api("POST", `/api/games/${view.id}/hint`);
    if (PLAY.view && PLAY.view.id === view.id && PLAY.view.cursor === hint.move) {
      PLAY.hint = hint;
      renderHint($("play-hint"), hint, playMove);
      renderTable($("play-table"), PLAY.view, { prefix: "play", onAction: playMove, odds: hint.odds });
    }
  } catch (error) {
    $("play-hint").textContent = error.message;
  } finally {
    $("hint-button").disabled = !(PLAY.view && PLAY.view.your_turn);
  }
}

function agentInputs(container, count, players, prefix) {
  const kept = Array.from(container.querySelectorAll("input")).map((input) => input.value);
  container.innerHTML = "";
  const fallback = INFO ? INFO.default_agents[String(players)] : "ev";
  for (let i = 0; i < count; i++) {
    container.append(el("label", {}, `${prefix} ${i + 1}`,
      el("input", { type: "text", list: "agent-specs", class: "agent-spec", placeholder: `default (${fallback})`, value: kept[i] || "" })));
  }
}

function agentSpecs(container) {
  // an empty field is the server's default agent for the table and rules
  return Array.from(container.querySelectorAll("input")).map((input) => input.value.trim() || "default");
}

function refreshPlayAgents() {
  const players = Number($("play-players").value) || 2;
  agentInputs($("play-agents"), Math.max(1, players - 1), players, "Opponent");
}

async function startPlay(event) {
  event.preventDefault();
  const players = Number($("play-players").value);
  const body = {
    mode: "play", players, seat: Number($("play-seat").value), rules: $("play-rules").value,
    agents: agentSpecs($("play-agents")),
  };
  const target = intOrNull($("play-target").value), rounds = intOrNull($("play-max-rounds").value);
  const seed = intOrNull($("play-seed").value);
  if (target !== null) body.target_score = target;
  if (rounds !== null) body.max_rounds = rounds;
  if (seed !== null) body.seed = seed;
  setStatus("Dealing…");
  try {
    PLAY.roundsSeen = 0;
    PLAY.hint = null;
    showPlay(await api("POST", "/api/games", body));
    setStatus("");
  } catch (error) {
    setStatus(`${error.field ? error.field + ": " : ""}${error.message}`, true);
  }
}

// --- watch ---------------------------------------------------------------------------------------

function showWatch(view) {
  WATCH.view = view;
  renderTable($("watch-table"), view, { prefix: "watch" });
  renderMoves($("watch-moves"), view);
  const live = view.live && !view.over ? " (live)" : "";
  $("watch-position").textContent = `move ${view.cursor} / ${view.known_moves}${live}`;
  if (!WATCH.hint || WATCH.hint.move !== view.cursor) renderHint($("watch-hint-panel"), null);
  const results = view.round_results;
  if (results.length) {
    const result = results[results.length - 1];
    const panel = $("watch-hint-panel");
    if (!WATCH.hint || WATCH.hint.move !== view.cursor) {
      panel.append(el("div", { class: "round-banner" }, el("b", {}, `Round ${result.round} (after move ${result.move})`), roundTable(result, view)));
    }
  }
  if (view.over) {
    $("watch-hint-panel").append(el("div", { id: "watch-over", class: "round-banner" },
      view.truncated ? "Stopped by the turn cap." : `Game over: ${view.winners.map((s) => view.seats[s].name + " (seat " + s + ")").join(", ")} won.`));
  }
  $("watch-play").textContent = WATCH.playing ? "Pause" : "Play ▶";
}

function peekQuery() {
  return $("watch-peek").checked ? "?peek=true" : "";
}

async function watchRequest(path, body) {
  if (!WATCH.view || WATCH.busy) return null;
  WATCH.busy = true;
  try {
    const view = await api("POST", `/api/games/${WATCH.view.id}/${path}${peekQuery()}`, body);
    showWatch(view);
    setStatus("");
    return view;
  } catch (error) {
    setStatus(error.message, true);
    stopPlaying();
    return null;
  } finally {
    WATCH.busy = false;
  }
}

function atEnd(view) {
  return view.over || (!view.live && view.cursor >= view.known_moves);
}

function stopPlaying() {
  WATCH.playing = false;
  clearTimeout(WATCH.timer);
  if (WATCH.view) showWatch(WATCH.view);
}

async function tick() {
  if (!WATCH.playing) return;
  const view = await watchRequest("step", { count: 1 });
  if (!view || atEnd(view)) { stopPlaying(); return; }
  WATCH.timer = setTimeout(tick, Number($("watch-speed").value));
}

function togglePlay() {
  if (!WATCH.view) return;
  if (WATCH.playing) { stopPlaying(); return; }
  if (atEnd(WATCH.view)) return;
  WATCH.playing = true;
  showWatch(WATCH.view);
  tick();
}

async function startWatch(event) {
  event.preventDefault();
  stopPlaying();
  const players = Number($("watch-players").value);
  const body = { mode: "watch", players, rules: $("watch-rules").value, agents: agentSpecs($("watch-agents")) };
  const target = intOrNull($("watch-target").value), rounds = intOrNull($("watch-max-rounds").value);
  const seed = intOrNull($("watch-seed").value);
  if (target !== null) body.target_score = target;
  if (rounds !== null) body.max_rounds = rounds;
  if (seed !== null) body.seed = seed;
  setStatus("Dealing…");
  try {
    WATCH.hint = null;
    showWatch(await api("POST", "/api/games", body));
    setStatus("");
  } catch (error) {
    setStatus(`${error.field ? error.field + ": " : ""}${error.message}`, true);
  }
}

async function openReplay(body) {
  stopPlaying();
  setStatus("Loading the replay…");
  try {
    WATCH.hint = null;
    showWatch(await api("POST", "/api/replays", body));
    setStatus("");
  } catch (error) {
    setStatus(`${error.field ? error.field + ": " : ""}${error.message}`, true);
  }
}

async function loadReplayList() {
  const select = $("replay-select");
  select.innerHTML = "";
  try {
    const list = await api("GET", "/api/replays");
    if (!list.directory) select.append(el("option", { value: "" }, "(server started without --replays)"));
    for (const file of list.files) select.append(el("option", { value: file.name }, file.name));
  } catch (error) {
    select.append(el("option", { value: "" }, error.message));
  }
}

async function watchHint() {
  const view = WATCH.view;
  if (!view || view.over) return;
  const panel = $("watch-hint-panel");
  panel.innerHTML = "";
  panel.append(el("div", { class: "thinking" }, "Searching…"));
  try {
    const hint = await api("POST", `/api/games/${view.id}/hint`);
    if (WATCH.view && WATCH.view.cursor === hint.move) {
      WATCH.hint = hint;
      renderHint(panel, hint);
      panel.prepend(el("div", { class: "hint-head" }, `For seat ${hint.seat} (${view.seats[hint.seat].name}):`));
    }
  } catch (error) {
    panel.textContent = error.message;
  }
}

function refreshWatchAgents() {
  const players = Number($("watch-players").value) || 2;
  agentInputs($("watch-agents"), players, players, "Seat");
  Array.from($("watch-agents").querySelectorAll("label")).forEach((label, i) => {
    label.firstChild.textContent = `Seat ${i} `;
  });
}

// --- assistant -----------------------------------------------------------------------------------

const EXAMPLE_GRID = ["5", "?", "?", "?", "?", "?", "3", "?", "?", "?", "?", "?"];
const EXAMPLE_OTHER = ["?", "1", "?", "?", "?", "?", "?", "?", "10", "?", "?", "?"];

function assistantShape() {
  const shape = INFO && INFO.preset_grids[$("assist-rules").value];
  return shape || [3, 4];
}

function assistantGrid(name, label, cells) {
  const [rows, cols] = assistantShape();
  const grid = el("div", { class: "grid inputs", style: `grid-template-columns: repeat(${cols}, 3.2em)`, "data-grid": name });
  for (let slot = 0; slot < rows * cols; slot++) {
    grid.append(el("input", { type: "text", class: "cell", value: cells ? cells[slot] : "?", "data-field": `${name}[${slot}]`, "data-grid": name, size: 3 }));
  }
  return el("div", { class: "assist-grid" }, el("div", {}, label), grid);
}

function refreshAssistantGrids() {
  const box = $("assist-grids");
  const others = Math.min(7, Math.max(1, Number($("assist-others").value) || 1));
  const [rows, cols] = assistantShape();
  const old = Array.from(box.querySelectorAll(".grid")).map((grid) => Array.from(grid.querySelectorAll("input")).map((i) => i.value))
    .filter((cells) => cells.length === rows * cols);
  box.innerHTML = "";
  box.append(assistantGrid("my_grid", "Your grid", old[0] || (EXAMPLE_GRID.length === rows * cols ? EXAMPLE_GRID : null)));
  const finisher = $("assist-finisher");
  const chosen = finisher.value;
  finisher.innerHTML = "";
  finisher.append(el("option", { value: "" }, "nobody"));
  const example = (cells) => (cells.length === rows * cols ? cells : null);
  for (let i = 0; i < others; i++) {
    box.append(assistantGrid(`others[${i}]`, `Player ${i + 1} after you`, old[i + 1] || example(EXAMPLE_OTHER)));
    finisher.append(el("option", { value: i + 1 }, `player ${i + 1}`));
  }
  finisher.value = chosen && Number(chosen) <= others ? chosen : "";
}

function parseCell(text) {
  const value = text.trim().toLowerCase();
  if (value === "" || value === "?") return "?";
  if (value === "x") return "x";
  return /^-?\d+$/.test(value) ? Number(value) : text;
}

function parseList(text) {
  return text.split(/[\s,;]+/).filter((part) => part !== "").map((part) => (/^-?\d+$/.test(part) ? Number(part) : part));
}

function fieldKey(field) {
  // "others.0.3" (a 422) and "others[0][3]" (a 400) name the same input
  return String(field || "").replace(/\.(\d+)/g, "[$1]");
}

async function askAssistant(event) {
  event.preventDefault();
  document.querySelectorAll(".bad").forEach((node) => node.classList.remove("bad"));
  $("assist-error").textContent = "";
  const grids = Array.from($("assist-grids").querySelectorAll(".grid")).map((grid) =>
    Array.from(grid.querySelectorAll("input")).map((input) => parseCell(input.value)));
  const body = {
    rules: $("assist-rules").value,
    my_grid: grids[0],
    others: grids.slice(1),
    discard_top: intOrNull($("assist-discard-top").value),
    discard_below: parseList($("assist-discard-below").value),
    phase: $("assist-phase").value,
  };
  const scores = parseList($("assist-scores").value);
  if (scores.length) body.scores = scores;
  const drawn = intOrNull($("assist-drawn").value);
  if (drawn !== null) body.drawn_card = drawn;
  if ($("assist-finisher").value !== "") body.finisher = Number($("assist-finisher").value);
  $("assist-result").innerHTML = "";
  $("assist-result").append(el("div", { class: "thinking" }, "Searching…"));
  try {
    const answer = await api("POST", "/api/assistant", body);
    const result = $("assist-result");
    result.innerHTML = "";
    const best = answer.moves.find((move) => move.recommended);
    let value = "";
    if (answer.value !== null) {
      value = best.network_choice ? ` — value ${answer.value.toFixed(3)} (the network's own move)`
        : ` — value ${answer.value.toFixed(3)} ± ${answer.error.toFixed(3)} over the network's move`;
    }
    result.append(el("div", { id: "assist-recommendation", class: "recommendation" }, `Best move: ${answer.recommended_text}${value}`));
    const details = el("div", {});
    renderHint(details, answer);
    result.append(details);
  } catch (error) {
    $("assist-result").innerHTML = "";
    $("assist-error").textContent = `${error.field ? error.field + ": " : ""}${error.message}`;
    const key = fieldKey(error.field);
    document.querySelectorAll("#assist-form [data-field], #assist-form [data-grid]").forEach((node) => {
      if (node.tagName === "INPUT" && (fieldKey(node.getAttribute("data-field")) === key || node.getAttribute("data-grid") === key)) {
        node.classList.add("bad");
      }
    });
  }
}

// --- start ---------------------------------------------------------------------------------------

function showView(name) {
  for (const view of ["play", "watch", "assistant"]) {
    $("view-" + view).classList.toggle("hidden", view !== name);
    $("tab-" + view).classList.toggle("active", view === name);
  }
  if (name === "watch") loadReplayList();
}

async function init() {
  try {
    INFO = await api("GET", "/api/info");
  } catch (error) {
    setStatus(`cannot reach the server: ${error.message}`, true);
    return;
  }
  for (const select of document.querySelectorAll(".rules-select")) {
    for (const preset of INFO.presets) select.append(el("option", { value: preset }, preset));
    select.value = "official";
  }
  const specs = el("datalist", { id: "agent-specs" });
  const names = [...INFO.builtin_agents, ...INFO.networks.map((n) => `ppo:${n}`), ...INFO.networks.map((n) => `search:ppo:${n}`), "search:ev"];
  for (const name of names) specs.append(el("option", { value: name }));
  document.body.append(specs);
  refreshPlayAgents();
  refreshWatchAgents();
  refreshAssistantGrids();
  $("assist-discard-top").value = "4";
  $("assist-scores").value = "0, 0";
  $("watch-speed-label").textContent = `${$("watch-speed").value} ms/move`;
}

document.querySelectorAll(".tab").forEach((tab) => tab.addEventListener("click", () => showView(tab.dataset.view)));
$("play-players").addEventListener("input", refreshPlayAgents);
$("watch-players").addEventListener("input", refreshWatchAgents);
$("assist-others").addEventListener("input", refreshAssistantGrids);
$("assist-rules").addEventListener("change", refreshAssistantGrids);
$("play-form").addEventListener("submit", startPlay);
$("watch-form").addEventListener("submit", startWatch);
$("assist-form").addEventListener("submit", askAssistant);
$("hint-button").addEventListener("click", askHint);
$("watch-play").addEventListener("click", togglePlay);
$("watch-step").addEventListener("click", () => { stopPlaying(); watchRequest("step", { count: 1 }); });
$("watch-back").addEventListener("click", () => { stopPlaying(); if (WATCH.view && WATCH.view.cursor > 0) watchRequest("seek", { move: WATCH.view.cursor - 1 }); });
$("watch-first").addEventListener("click", () => { stopPlaying(); watchRequest("seek", { move: 0 }); });
$("watch-hint").addEventListener("click", watchHint);
$("watch-peek").addEventListener("change", async () => {
  if (WATCH.view) showWatch(await api("GET", `/api/games/${WATCH.view.id}${peekQuery()}`));
});
$("watch-speed").addEventListener("input", () => { $("watch-speed-label").textContent = `${$("watch-speed").value} ms/move`; });
$("replay-open").addEventListener("click", () => {
  const name = $("replay-select").value;
  if (name) openReplay({ name });
});
$("replay-file").addEventListener("change", async () => {
  const file = $("replay-file").files[0];
  if (!file) return;
  let replay;
  try {
    replay = JSON.parse(await file.text());
  } catch (error) {
    setStatus(`${file.name} is not JSON: ${error.message}`, true);
    return;
  }
  openReplay({ replay });
});
init();
