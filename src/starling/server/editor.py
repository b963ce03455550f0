"""The editor's HTTP API: the schema, the running config, live edits, and TOML files in a workspace.

Usable alone (scripts, other front-ends) and by the app's editor panel:

``GET  /api/schema``        the JSON Schema of scenario configs (every registered behaviour, mover, …)
``GET  /api/catalog``       what can be chosen where: behaviours by group kind and result type, mergers
                            and what they accept, movers, query methods, each with its parameter schema
``GET  /api/config``        the running config as plain data
``PUT  /api/config``        validate a whole config and apply it live (``Simulation.reconfigure``); a bad
                            one is answered 422 with every ``{path, message}`` and nothing is applied
``GET  /api/config/toml``   the running config as TOML text (the app's download)
``POST /api/config/save``   ``{"name": "my_scene"}``: the running config to ``WORKSPACE/my_scene.toml``
``GET  /api/config/files``  the TOML files in the workspace
``POST /api/config/load``   ``{"name": "my_scene"}`` from the workspace, or ``{"toml": "…"}`` (an upload):
                            validated and applied like ``PUT``

Edits run in the simulation's thread between two steps (:meth:`SimulationRunner.call`),
so animals keep their positions. Names are one plain word (letters, digits, ``_``, ``-``),
so nothing can be written or read outside the workspace; bodies over 10 MB are refused.
"""
from __future__ import annotations

import asyncio
import datetime
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ..config import ConfigError, Problem, json_schema
from ..config.catalog import catalog
from ..config.io import scenario_text, scenario_to_toml

MAX_BODY_BYTES = 10 * 1024 * 1024
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")
CALL_TIMEOUT_S = 120.0


def _errors(status: int, problems: list[Problem]) -> JSONResponse:
    return JSONResponse(status_code=status, content={"errors": [{"path": p.path, "message": p.message}
                                                                 for p in problems]})


async def _body(request: Request) -> Any:
    """The JSON body, or a ConfigError naming what is wrong with it (size, encoding, syntax)."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise _TooLarge()
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise _TooLarge()
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError([Problem("", "the body is not UTF-8 text")]) from None
    except ValueError as exc:
        raise ConfigError([Problem("", f"the body is not valid JSON: {exc}")]) from None


class _TooLarge(Exception):
    pass


def _file_name(body: Any) -> str:
    name = body.get("name") if isinstance(body, dict) else None
    if not isinstance(name, str):
        raise ConfigError([Problem("name", "give the file's name, e.g. {\"name\": \"my_scene\"}")])
    name = name[:-5] if name.endswith(".toml") else name
    if not NAME.match(name):
        raise ConfigError([Problem("name", f"{name!r} is not a plain name: use letters, digits, '_' and '-' "
                                           "(at most 64), starting with a letter or digit")])
    return name


def editor_router(runner: Any, workspace: Path) -> APIRouter:
    """The routes above, editing what ``runner`` runs and saving into ``workspace``."""
    router = APIRouter(prefix="/api")
    folder = Path(workspace)

    async def in_sim_thread(fn: Callable[[Any], Any]) -> Any:
        return await asyncio.to_thread(runner.call, fn, CALL_TIMEOUT_S)

    async def apply(data: Any) -> JSONResponse:
        if not isinstance(data, dict):
            return _errors(422, [Problem("", "a scenario config is a JSON object (a TOML table)")])
        try:
            result = await in_sim_thread(lambda r: r.apply_config(data))
        except ConfigError as err:
            return _errors(422, err.problems)
        return JSONResponse(content={"applied": True, **result})

    async def guarded(handler: Callable[[], Any]) -> JSONResponse:
        try:
            return await handler()
        except _TooLarge:
            return _errors(413, [Problem("", f"the body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MB")])
        except ConfigError as err:
            return _errors(422, err.problems)
        except TimeoutError:
            return _errors(503, [Problem("", "the simulation did not answer in time")])

    @router.get("/schema")
    async def schema() -> JSONResponse:
        return JSONResponse(content=json_schema())

    @router.get("/catalog")
    async def get_catalog() -> JSONResponse:
        return JSONResponse(content=catalog())

    @router.get("/config")
    async def get_config() -> JSONResponse:
        async def handler():
            return JSONResponse(content=await in_sim_thread(lambda r: r.config_data()))
        return await guarded(handler)

    @router.put("/config")
    async def put_config(request: Request) -> JSONResponse:
        async def handler():
            return await apply(await _body(request))
        return await guarded(handler)

    @router.get("/config/toml")
    async def get_toml() -> JSONResponse:
        async def handler():
            return JSONResponse(content={"toml": await in_sim_thread(lambda r: scenario_to_toml(r.sim.scenario))})
        return await guarded(handler)

    @router.post("/config/save")
    async def save(request: Request) -> JSONResponse:
        async def handler():
            name = _file_name(await _body(request))
            text = await in_sim_thread(lambda r: scenario_to_toml(r.sim.scenario))
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"{name}.toml"
            partial = target.with_suffix(".toml.partial")
            partial.write_text(text)
            os.replace(partial, target)
            return JSONResponse(content={"saved": name, "file": f"{name}.toml", "bytes": len(text.encode())})
        return await guarded(handler)

    @router.get("/config/files")
    async def files() -> JSONResponse:
        found = sorted(folder.glob("*.toml")) if folder.is_dir() else []
        return JSONResponse(content={"workspace": str(folder), "files": [
            {"name": p.stem, "file": p.name, "bytes": p.stat().st_size,
             "modified": datetime.datetime.fromtimestamp(p.stat().st_mtime, datetime.timezone.utc)
             .isoformat(timespec="seconds")} for p in found]})

    @router.post("/config/load")
    async def load(request: Request) -> JSONResponse:
        async def handler():
            body = await _body(request)
            if isinstance(body, dict) and "toml" in body:
                text = body["toml"]
                if not isinstance(text, str):
                    raise ConfigError([Problem("toml", "give the file's text")])
                label = "upload"
            else:
                name = _file_name(body)
                path = folder / f"{name}.toml"
                if not path.is_file():
                    raise ConfigError([Problem("name", f"no file {name}.toml in the workspace")])
                label = path.name
                text = scenario_text(path.read_bytes(), label)
            if "\x00" in text:
                raise ConfigError([Problem("toml", "a binary file, not a scenario (scenarios are TOML text)")])
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError([Problem("toml", f"not valid TOML: {exc}")], label) from None
            return await apply(data)
        return await guarded(handler)

    return router
