"""Take docs/map-all.png (the whole map) and docs/map.png (a question asked, its papers ringed and zoomed to on
the map, one of them clicked) of the page over an index (default: the 2,114-paper evaluation index):
`python docs/map_screenshot.py [DATA_DIR]` (chromium, Playwright)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.config import Settings  # noqa: E402
from rag.engine import Engine  # noqa: E402
from rag.web.app import launch  # noqa: E402

QUESTION = "Which papers use diffusion models for image restoration?"

with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
data_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".rag-eval" / "iclr2025"
engine = Engine(Settings.load(data_dir=data_dir, port=port))
engine.topics()
demo = launch(engine, block=False)
from playwright.sync_api import sync_playwright  # noqa: E402

with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"http://127.0.0.1:{port}/")
    page.wait_for_function("document.querySelectorAll('#map circle').length > 100", timeout=120_000)
    panel = page.locator("#map-panel")
    page.locator("#map circle").nth(1000).dispatch_event("mouseover")
    panel.locator(".map-plot").screenshot(path=str(ROOT / "docs" / "map-all.png"))
    page.fill("#question textarea", QUESTION)
    page.click("#ask")
    page.wait_for_function("document.querySelectorAll('#map circle.hl').length > 0", timeout=120_000)
    first = page.eval_on_selector_all("#map circle.hl", "cs => cs.map(c => c.dataset.paper)")[0]
    page.locator(f'#map circle[data-paper="{first}"]').dispatch_event("mouseover")
    page.locator(f'#map circle[data-paper="{first}"]').dispatch_event("click")
    page.wait_for_function("document.querySelector('#map .map-card .src-title')", timeout=60_000)
    page.locator("#map .map-card > .src-related > summary").click()
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=str(ROOT / "docs" / "map.png"))
    browser.close()
demo.close()
print("wrote docs/map-all.png, docs/map.png")
