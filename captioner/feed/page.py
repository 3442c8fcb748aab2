"""The caption page served to browser sources (OBS and the like), styled like the overlay."""

from __future__ import annotations

import html

from captioner.feed.state import KEEP_LINES

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Captioner live captions</title>
<style>
  html, body {{ margin: 0; background: transparent; }}
  #captions {{ position: fixed; left: 0; right: 0; bottom: 0; padding: 0.3em 0.5em;
    background: {background}; color: {text}; font: 600 {size}px "{font}", sans-serif;
    line-height: 1.25; }}
  #captions:empty {{ display: none; }}
  .live {{ color: {live}; font-style: italic; }}
</style></head>
<body><div id="captions" role="log" aria-live="polite" aria-label="Live captions"></div>
<script>
const box = document.getElementById("captions");
const keep = {keep};
let lines = [];
function render(live) {{
  box.textContent = "";
  for (const text of lines) {{
    const div = document.createElement("div"); div.textContent = text; box.appendChild(div);
  }}
  if (live) {{
    const div = document.createElement("div"); div.className = "live";
    div.textContent = live; box.appendChild(div);
  }}
}}
function connect() {{
  const ws = new WebSocket(`ws://${{location.host}}/ws${{location.search}}`);
  ws.onmessage = (event) => {{
    const msg = JSON.parse(event.data);
    if (msg.type === "snapshot") lines = [];
    lines = lines.concat(msg.final.map((line) => line.text)).slice(-keep);
    render(msg.live);
  }};
  ws.onclose = () => setTimeout(connect, 1000);  // the app restarted: reconnect
}}
connect();
</script></body></html>
"""


def render_page(*, text: str, background: str, live: str, font: str, size_px: int,
                keep: int = KEEP_LINES) -> str:
    return _PAGE.format(text=text, background=background, live=live, keep=keep,
                        font=html.escape(font, quote=True), size=size_px)


__all__ = ["render_page"]
