"""`GET /`: a page to talk to the model, served from this package.

A microphone button, partial and final text as you speak, and a file
upload.

`index.html` lays it out, `page.js` streams the microphone over
`/v1/stream` and posts files to `/v1/transcribe`, and `pcm-worklet.js` (an
AudioWorklet) turns the microphone's samples into 16 kHz 16-bit PCM in
100 ms messages.
"""

from __future__ import annotations

import pathlib

from aiohttp import web

PAGE_DIR = pathlib.Path(__file__).parent
# The files served, by name, and their media types.
FILES = {
    "index.html": "text/html",
    "page.js": "text/javascript",
    "pcm-worklet.js": "text/javascript",
}


def _file_handler(name: str):
    body = (PAGE_DIR / name).read_bytes()
    content_type = FILES[name]

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type=content_type, charset="utf-8")

    return handler


def add_page_routes(app: web.Application) -> None:
    """`GET /` (the page) and `GET /page/<file>` (its scripts)."""
    app.router.add_get("/", _file_handler("index.html"))
    for name in FILES:
        app.router.add_get(f"/page/{name}", _file_handler(name))
