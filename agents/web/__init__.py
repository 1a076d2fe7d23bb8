"""``skyjo-web``: play, watch and get hints in the browser.

A local web server (FastAPI on uvicorn, `agents.web.server.create_app`) serves one page
(``static/``, plain JavaScript, no build step) and a JSON API under ``/api/`` (documented
in ``docs/web.md``). The rules, agents and search run in process: `agents.web.games`
keeps game sessions over the engine, `agents.web.hints` values every legal move with the
search, `agents.web.assistant` rebuilds a real table from what is visible, and
`agents.web.specs` decides which agent specs a request may name.
"""
