"""The page's map of the collection: every paper a point (its place from `rag.explore.topicmap`'s t-SNE layout),
coloured by topic, with the topics' names as a legend. Hover shows the title; a click shows the paper's card (and its
related papers) under the map; the papers of the latest answer are ringed and the view zooms to them ("Show all" or
a double-click shows the whole map again); the decision and author filters grey out the papers they leave out.

Drawn by our own few lines of JavaScript into an SVG inside a `gr.HTML` (Gradio 6's `js_on_load` with
`server_functions`): no plotting library and nothing fetched from outside the server. The points come from the
`map_points` server function once per page load; the component's value is only a small JSON state (papers to
ring, papers the filters keep), which the script applies when it changes. Titles are set as `textContent`, and the
card is HTML built by `rag.web.render.paper_card`, which escapes every text: nothing from a paper is live markup.
"""

from __future__ import annotations

import html
import json
import logging
import threading
import time
from typing import Any

import gradio as gr

from rag.errors import RagError, one_line
from rag.explore.topicmap import kind, topic_map
from rag.store.index import paper_count
from rag.text import readable, strip_bidi
from rag.web.render import paper_card

TEMPLATE = ('<div class="map-status">Loading the map…</div><div class="map-hover">&#160;</div>'
            '<button type="button" class="map-reset" hidden>Show all</button>'
            '<svg class="map-plot" viewBox="-20 -20 1040 1040" preserveAspectRatio="xMidYMid meet" role="img" '
            'aria-label="map of the collection"></svg><div class="map-legend"></div><div class="map-card"></div>')

MAP_CSS = """
.map-plot {width: 100%; height: 560px; border: 1px solid var(--border-color-primary); border-radius: 8px;}
.map-plot circle {stroke: none; cursor: pointer; opacity: 0.8;}
.map-plot circle.dim {fill: #c8c8c8 !important; opacity: 0.3;}
.map-plot circle.hl {stroke: #111; stroke-width: 3; opacity: 1;}
/* One line always: a long title wrapping on a phone pushed the map down between a tap and its click, which then
   landed beside the point. */
.map-hover {font-size: 0.9em; height: 1.4em; font-style: italic; white-space: nowrap; overflow: hidden;
            text-overflow: ellipsis;}
.map-status {font-size: 0.9em; opacity: 0.8;}
.map-reset {font-size: 0.85em; padding: 2px 10px; margin: 2px 0; border: 1px solid var(--border-color-primary);
            border-radius: 6px; background: var(--background-fill-secondary); cursor: pointer;}
.map-reset[hidden] {display: none;}
.map-legend {display: flex; flex-wrap: wrap; gap: 4px 12px; font-size: 0.8em; margin: 6px 0;}
.map-legend span.sw {display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 4px;}
.map-card:empty {display: none;}
"""

# Runs once when the component mounts: `element`, `props`, `server` and `watch` come from Gradio.
MAP_JS = r"""
const NS = 'http://www.w3.org/2000/svg';
const svg = element.querySelector('.map-plot');
const status = element.querySelector('.map-status');
const hover = element.querySelector('.map-hover');
const legend = element.querySelector('.map-legend');
const card = element.querySelector('.map-card');
const reset = element.querySelector('.map-reset');
// The whole map on demand ("Show all", or a double-click on the map) after an answer zoomed it, until the next
// answer or filter change zooms it again: before, only "New conversation" gave the whole map back.
let overview = false;
const FULL = '-20 -20 1040 1040';
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#6b4c9a', '#bcbd22',
  '#17becf', '#aec7e8', '#ffbb78', '#98df8a', '#ff9896', '#c5b0d5', '#c49c94', '#f7b6d2', '#dbdb8d', '#9edae5',
  '#393b79'];
const byId = new Map();
function apply() {
  let st = {};
  try { st = JSON.parse(props.value || '{}') || {}; } catch (e) { st = {}; }
  const ring = new Set(st.highlight || []);
  const keep = Array.isArray(st.keep) ? new Set(st.keep) : null;
  for (const [pid, c] of byId) {
    c.classList.toggle('hl', ring.has(pid));
    c.classList.toggle('dim', keep !== null && !keep.has(pid));
  }
  const ringed = [...ring].map((pid) => byId.get(pid)).filter(Boolean);
  reset.hidden = !ringed.length || overview;
  if (!ringed.length || overview) { zoom(FULL, 1); return; }
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const c of ringed) {
    const x = +c.getAttribute('cx'), y = +c.getAttribute('cy');
    x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
    c.parentNode.appendChild(c);  // drawn last: on top
  }
  const side = Math.min(Math.max(x1 - x0, y1 - y0, 120) * 1.4, 1040);  // never wider than the whole map
  const cx = Math.min(Math.max((x0 + x1) / 2, side / 2 - 20), 1020 - side / 2);  // and never past its edges
  const cy = Math.min(Math.max((y0 + y1) / 2, side / 2 - 20), 1020 - side / 2);
  zoom(`${cx - side / 2} ${cy - side / 2} ${side} ${side}`, side / 1040);
}
// On a touch screen or a narrow one a point is at least TOUCH_PX across on the screen, whatever the map's width:
// 6 units of a 1040-unit map drawn 360 px wide were 2 px, too small to tap.
const TOUCH_PX = 12;
const TOUCH = window.matchMedia('(pointer: coarse), (max-width: 640px)');
function zoom(box, scale) {  // points grow less than the view: zoomed in, they spread apart
  svg.setAttribute('viewBox', box);
  const width = svg.getBoundingClientRect().width;
  const least = TOUCH.matches && width > 0 ? (TOUCH_PX / 2) * (1040 * scale) / width : 0;  // in map units
  const r = Math.max(6 * Math.sqrt(scale), least).toFixed(2), ring = (3 * Math.sqrt(scale)).toFixed(2);
  for (const c of byId.values()) { c.setAttribute('r', r); c.style.strokeWidth = ring; }
}
window.addEventListener('resize', () => apply());
function draw(data) {
  if (!data || data.error) { status.textContent = (data && data.error) || 'The map is not available.'; return; }
  svg.replaceChildren();
  byId.clear();
  data.id.forEach((pid, i) => {
    const c = document.createElementNS(NS, 'circle');
    c.setAttribute('cx', (data.x[i] * 1000).toFixed(1));
    c.setAttribute('cy', ((1 - data.y[i]) * 1000).toFixed(1));
    c.setAttribute('r', '6');
    c.setAttribute('fill', PALETTE[(data.topic[i] - 1) % PALETTE.length]);
    c.dataset.paper = pid;
    c.dataset.topic = data.topic[i];
    const t = document.createElementNS(NS, 'title');
    t.textContent = data.title[i];
    c.appendChild(t);
    svg.appendChild(c);
    byId.set(pid, c);
  });
  legend.replaceChildren();
  data.topics.forEach((t) => {
    const item = document.createElement('span');
    const sw = document.createElement('span');
    sw.className = 'sw';
    sw.style.background = PALETTE[(t.n - 1) % PALETTE.length];
    item.appendChild(sw);
    item.appendChild(document.createTextNode(`${t.n}. ${t.label} (${t.size})`));
    legend.appendChild(item);
  });
  status.textContent = `${data.counted} in ${data.topics.length} topics. Hover over a point for its ` +
    'title, click it for its card. The latest answer\'s papers are ringed and zoomed to (Show all or a ' +
    'double-click shows the whole map); the filters grey out the rest.';
  apply();
}
svg.addEventListener('mouseover', (ev) => {
  const c = ev.target.closest && ev.target.closest('circle');
  if (c) hover.textContent = c.querySelector('title').textContent;
});
svg.addEventListener('click', (ev) => {
  const c = ev.target.closest && ev.target.closest('circle');
  if (!c) return;
  card.textContent = 'Loading…';
  server.map_card(c.dataset.paper).then((h) => { card.innerHTML = h; });  // rag.web.render.paper_card: escaped
});
function showAll(ev) { if (ev) ev.preventDefault(); overview = true; apply(); }
reset.addEventListener('click', showAll);
svg.addEventListener('dblclick', showAll);
watch('value', () => { overview = false; apply(); });
server.map_points().then(draw).catch(() => { status.textContent = 'The map could not be loaded.'; });
"""


class MapPanel:
    """The map component and its server side: the points, a paper's card, and the state an answer or the
    filters set."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.html: gr.HTML | None = None

    def render(self) -> gr.HTML:
        # Gradio marks each server function with an attribute, which a bound method cannot take: plain functions.
        # Each is called with one argument, what the script passed (`server.map_card(id)`: [id]).
        def map_points(data: Any = None) -> dict:
            return self.map_points()

        def map_card(data: Any = None) -> str:
            return self.map_card(data[0] if isinstance(data, list) and data else data)

        functions = [map_points, map_card]
        self.html = gr.HTML(json.dumps({}), html_template=TEMPLATE, css_template=MAP_CSS, js_on_load=MAP_JS,
                            server_functions=functions, elem_id="map")
        return self.html

    def map_points(self) -> dict:
        """Every paper's place, topic and title, and the topics' names (computed once per index content)."""
        try:  # while the collection is being indexed, the map made before (if any) rather than one per batch
            tmap = topic_map(self.engine, stale_ok=self.engine.indexing.running)
        except RagError as exc:
            return {"error": one_line(exc)}
        # Without bidi controls: the script sets them as text, but a U+202E in a title would still reverse the
        # "— topic n" after it in the hover line.
        titles = {p.paper_id: strip_bidi(readable(p.title or p.label)) for p in self.engine.retriever.state.papers}
        labels = {t.n: strip_bidi(t.label) for t in tmap.topics}
        on_map = set(tmap.paper_ids)
        counted = paper_count([p for p in self.engine.retriever.state.papers if p.paper_id in on_map])
        return {"id": tmap.paper_ids, "counted": counted, "x": [p[0] for p in tmap.xy], "y": [p[1] for p in tmap.xy],
                "topic": tmap.topic,
                "title": [f"{titles.get(pid, pid)} — topic {n}: {labels.get(n, '')}"
                          for pid, n in zip(tmap.paper_ids, tmap.topic, strict=False)],
                "topics": [{"n": t.n, "label": labels[t.n], "size": t.size} for t in tmap.topics]}

    def map_card(self, paper_id: Any) -> str:
        """The card of a clicked paper, with its related papers (escaped HTML)."""
        if not isinstance(paper_id, str):
            return '<p class="src-note">No such paper.</p>'
        try:
            found = self.engine.related(paper_id[:200], 5).to_dict()
        except RagError as exc:
            return f'<p class="src-note">{html.escape(one_line(exc))}</p>'
        return paper_card(found["paper"], found["related"])

    def state(self, answers: list[dict] | None, decisions: list[str] | None, author: str | None) -> str:
        """What the map shows around the points: the latest answer's papers (those it cites, else those it found)
        ringed, and (when a decision or author filter is set, in the panel or by the question's words: "orals on
        X", "papers by Y") the papers the filters keep."""
        latest = (answers or [])[-1:] or [{}]
        ring = [s["paper_id"] for s in latest[0].get("citations") or latest[0].get("sources") or []]
        filters = latest[0].get("filters") or {}
        if not decisions and "decisions" in set(filters.get("from_question") or []) - set(filters.get("widened") or []):
            decisions = filters.get("decisions") or []
        if not (author or "").strip() and "author" in (filters.get("from_question") or []):
            author = filters.get("author") or ""
        keep = None
        needle = (author or "").strip().casefold()
        if decisions or needle:
            kinds = {kind(d) for d in decisions or []}
            keep = [p.paper_id for p in self.engine.retriever.state.papers
                    if (not kinds or kind(p.decision) in kinds)
                    and (not needle or any(needle in a.casefold() for a in p.authors))]
        return json.dumps({"highlight": ring, "keep": keep})


def warm(engine: Any, poll: float = 5.0) -> threading.Thread:
    """Compute (or read) the map in the background at start-up, so the first page load finds it ready; when the
    collection is being indexed meanwhile (the bundled list), compute it again once that ends, so the first
    visitor after it does not wait for the new map either."""
    def run() -> None:
        try:
            engine.topics()
            if engine.indexing.running:
                while engine.indexing.running:
                    time.sleep(poll)
                engine.topics()
        except Exception as exc:  # the page says the map is not available when it asks
            logging.getLogger("rag.web").warning("the topic map could not be built: %s", exc)

    thread = threading.Thread(target=run, name="topic-map", daemon=True)
    thread.start()
    return thread
