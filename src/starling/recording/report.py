"""``starling report``: an HTML page of plots about one recording, drawn headless with matplotlib.

The page (``index.html``) lists the run (scenario, seed, steps, dt, frames) and the
summary table of :func:`~starling.recording.summary.summarize`, then one PNG per view:

``order.png``       polarization and milling over time, per species
``nn_hist.png``     nearest-neighbour distances at the first, middle and last frame
``groups.png``      number of groups and the largest group's share over time
``population.png``  animals alive per frame with each death marked, and deaths by cause
``occupancy.png``   brain-state shares over time (stacked), one panel per species with a brain
``tracks.png``      a top view (x–z: y is up) of a few animals' trajectories

A view without data (no metric samples, no brains, no animals) is not drawn; the page
says why in its place. Figures are built on ``matplotlib.figure.Figure`` (the Agg
canvas), so no display and no global pyplot state are involved.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Callable, Optional, Union

import numpy as np

from ..metrics import nearest_neighbor_distances
from .summary import (alive_counts, checked, frames_seen, metrics_table, occupancy_over_time, species_table,
                      states_text, summarize)

#: the views in page order: file stem, title, caption
VIEWS = (
    ("order", "Order parameters", "Polarization |Σ v̂|/n and milling |Σ r×v|/Σ|r||v| of each species over time."),
    ("nn_hist", "Nearest-neighbour distances",
     "Each animal's distance to its nearest fellow at three frames (minimum-image in a wrapping world)."),
    ("groups", "Groups", "Connected groups (animals closer than the group radius are linked): "
                         "how many, and the share of the species in the largest."),
    ("population", "Population and deaths", "Animals alive in each frame; every death is marked where it happened "
                                            "in time. Below: deaths so far, by species and cause."),
    ("occupancy", "Brain states", "Share of the living animals in each brain state over time."),
    ("tracks", "Trajectories (top view)", "A few animals followed by uid across the recording, seen from above "
                                          "(x–z plane, y is up); ○ start, ▲ end."),
)
TRACKS_PER_SPECIES = 4
DPI = 110


class NoData(Exception):
    """A view has nothing to draw; the message goes on the page instead of the image."""


def _figure(rows: int = 1, cols: int = 1, height: float = 3.2, width: float = 8.0, **kw):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height * rows), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, **kw)
    return fig, axes


def _colors(names: list[str]) -> dict[str, str]:
    return {name: f"C{i % 10}" for i, name in enumerate(names)}


def _series(rec, keys: tuple[str, ...]) -> dict[str, dict[str, np.ndarray]]:
    """Species whose metric samples hold at least one finite value of a key."""
    out = {}
    for name, table in rec.metrics.items():
        if name in rec.species and len(table.get("time", ())) and any(
                k in table and np.isfinite(table[k]).any() for k in keys):
            out[name] = table
    return out


# ------------------------------------------------------------------------------------------------ views
def plot_order(rec, path: Path) -> None:
    tables = _series(rec, ("polarization", "milling"))
    if not tables:
        raise NoData("no metric samples in this recording (it was made with --metrics-every 0)")
    colors = _colors(rec.species)
    fig, axes = _figure(2, 1, sharex=True)
    for ax, key, label in ((axes[0, 0], "polarization", "polarization"), (axes[1, 0], "milling", "milling")):
        for name, t in tables.items():
            if key in t:
                ax.plot(t["time"], t[key], color=colors[name], label=name, lw=1.5)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(f"{label} (0–1)")
        ax.grid(alpha=0.3)
    axes[0, 0].set_title("Order parameters over time")
    axes[0, 0].legend(loc="best", fontsize="small")
    axes[1, 0].set_xlabel("time (s)")
    fig.savefig(path)


def plot_nn_hist(rec, path: Path) -> None:
    frames = sorted({0, rec.n_frames // 2, rec.n_frames - 1})
    data = {}
    for i in frames:
        frame = rec.frame(i)
        for name in rec.species:
            d = nearest_neighbor_distances(frame[name].position, box=rec.box)
            if d.size:
                data.setdefault(name, []).append((i, d))
    if not data:
        raise NoData("no species had two animals alive in the first, middle or last frame")
    fig, axes = _figure(len(data), 1, height=2.6)
    for ax, (name, runs) in zip(axes[:, 0], data.items()):
        top = max(float(np.percentile(d, 99)) for _, d in runs)
        bins = np.linspace(0.0, top * 1.05 if top > 0 else 1.0, 40)
        for k, (i, d) in enumerate(runs):
            ax.hist(np.minimum(d, bins[-1]), bins=bins, histtype="step", lw=1.6, color=f"C{k}",
                    label=f"t = {rec.times[i]:.1f} s (n = {d.size}, median {np.median(d):.2f} m)")
        ax.set_title(f"{name}: nearest-neighbour distance")
        ax.set_xlabel("distance to the nearest other (m); the last bin holds the top 1 %")
        ax.set_ylabel("animals")
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
    fig.savefig(path)


def plot_groups(rec, path: Path) -> None:
    tables = _series(rec, ("groups",))
    if not tables:
        raise NoData("no group counts recorded (no metric samples, or no species has a group radius: "
                     "set the scenario's group_distance)")
    colors = _colors(rec.species)
    fig, axes = _figure(2, 1, sharex=True)
    for name, t in tables.items():
        axes[0, 0].plot(t["time"], t["groups"], color=colors[name], label=name, lw=1.5, drawstyle="steps-post")
        if "largest_group" in t:
            axes[1, 0].plot(t["time"], t["largest_group"], color=colors[name], label=name, lw=1.5)
    axes[0, 0].set_title("Groups over time")
    axes[0, 0].set_ylabel("number of groups")
    _integer_ticks(axes[0, 0])
    axes[0, 0].legend(fontsize="small")
    axes[1, 0].set_ylabel("largest group (share)")
    axes[1, 0].set_ylim(-0.02, 1.02)
    axes[1, 0].set_xlabel("time (s)")
    for ax in axes[:, 0]:
        ax.grid(alpha=0.3)
    fig.savefig(path)


def _integer_ticks(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def plot_population(rec, path: Path) -> None:
    if rec.n_frames == 0:
        raise NoData("the recording holds no frame")
    colors = _colors(rec.species)
    deaths = [e for e in rec.events if e.get("kind") == "death" and e.get("species") in rec.species]
    fig, axes = _figure(len(rec.species) + 1, 1, height=2.4, sharex=True)
    for ax, name in zip(axes[:, 0], rec.species):  # one panel each: 3 sharks beside 200 fish stay readable
        alive = alive_counts(rec, name)
        ax.plot(rec.times, alive, color=colors[name], label="alive", lw=1.5, drawstyle="steps-post")
        when = np.array([e["time"] for e in deaths if e["species"] == name], np.float64)
        if when.size:
            at = alive[np.clip(np.searchsorted(rec.times, when, side="right") - 1, 0, None)]
            ax.plot(when, at, "x", color="k", ms=6, label=f"death ({when.size})")
        ax.set_title(f"{name}: animals alive")
        ax.set_ylabel("animals")
        ax.set_ylim(0, max(1, int(alive.max())) * 1.1)
        _integer_ticks(ax)
        ax.legend(fontsize="small", loc="lower left")
    ax = axes[-1, 0]
    lines = 0
    for name in rec.species:
        causes = sorted({(e.get("detail") or {}).get("cause", "unknown") for e in deaths if e["species"] == name})
        for k, cause in enumerate(causes):
            when = np.sort([e["time"] for e in deaths
                            if e["species"] == name and (e.get("detail") or {}).get("cause", "unknown") == cause])
            t = np.concatenate([[rec.times[0]], when, [rec.times[-1]]])
            n = np.concatenate([[0], np.arange(1, when.size + 1), [when.size]])
            ax.plot(t, n, color=colors[name], ls=("-", "--", ":", "-.")[k % 4], drawstyle="steps-post",
                    label=f"{name}: {cause}")
            lines += 1
    if lines:
        ax.legend(fontsize="small", ncol=2, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no deaths", transform=ax.transAxes, ha="center", va="center", color="0.4")
    ax.set_title("Deaths so far, by species and cause")
    ax.set_ylabel("deaths")
    ax.set_xlabel("time (s)")
    _integer_ticks(ax)
    for a in axes[:, 0]:
        a.grid(alpha=0.3)
    fig.savefig(path)


def plot_occupancy(rec, path: Path) -> None:
    brains = [name for name in rec.species if rec.state_names(name)]
    if not brains or rec.n_frames == 0:
        raise NoData("no species in this recording has a brain, so there are no states to show")
    fig, axes = _figure(len(brains), 1, height=2.6)
    for ax, name in zip(axes[:, 0], brains):
        names = rec.state_names(name)
        shares = occupancy_over_time(rec, name)
        ax.stackplot(rec.times, np.nan_to_num(shares).T, labels=names, alpha=0.85)
        ax.set_title(f"{name}: brain states")
        ax.set_ylabel("share of the living")
        ax.set_ylim(0, 1)
        ax.set_xlim(rec.times[0], rec.times[-1] if rec.times[-1] > rec.times[0] else rec.times[0] + 1)
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    axes[-1, 0].set_xlabel("time (s)")
    fig.savefig(path)


def _chosen_uids(rec, species: str, count: int) -> list[int]:
    """``count`` of the animals seen in the most frames, spread over the uids (spawn order is often spatial)."""
    ids, frames = frames_seen(rec, species)
    if ids.size == 0:
        return []
    longest = ids[frames == frames.max()]
    if longest.size < count:
        longest = ids[np.lexsort((ids, -frames))[:count]]
    pick = np.unique(np.linspace(0, longest.size - 1, min(count, longest.size)).round().astype(int))
    return sorted(int(i) for i in longest[pick])


def _broken_at_seams(x: np.ndarray, z: np.ndarray, box) -> tuple[np.ndarray, np.ndarray]:
    """NaN between samples that jump more than half a period, so a wrap is not drawn across the world."""
    if box is None:
        return x, z
    L = np.broadcast_to(np.asarray(box, np.float64), (3,))
    jump = np.zeros(max(len(x) - 1, 0), bool)
    for a, v in ((0, x), (2, z)):
        if np.isfinite(L[a]) and L[a] > 0:
            jump |= np.abs(np.diff(v)) > L[a] / 2
    cut = np.flatnonzero(jump) + 1
    return np.insert(x.astype(np.float64), cut, np.nan), np.insert(z.astype(np.float64), cut, np.nan)


def plot_tracks(rec, path: Path) -> None:
    fig, axes = _figure(1, 1, height=6.5, width=8.5)
    ax = axes[0, 0]
    markers = ("-", "--", ":", "-.")
    drawn = 0
    for s, name in enumerate(rec.species):
        for uid in _chosen_uids(rec, name, TRACKS_PER_SPECIES):
            track = rec.track(name, uid)
            x, z = track["x"].to_numpy(), track["z"].to_numpy()
            if x.size == 0:
                continue
            color = f"C{drawn % 10}"
            ax.plot(*_broken_at_seams(x, z, rec.box), markers[s % 4], color=color, lw=1.3, alpha=0.9,
                    label=f"{name} {uid}")
            ax.plot(x[0], z[0], "o", mfc="none", color=color, ms=7)
            ax.plot(x[-1], z[-1], "^", color=color, ms=7)
            drawn += 1
    if not drawn:
        raise NoData("no animal is alive in any frame")
    world = rec.config.get("world", {}) if isinstance(rec.config, dict) else {}
    lo, hi = world.get("bounds_min"), world.get("bounds_max")
    if lo and hi:
        from matplotlib.patches import Rectangle

        ax.add_patch(Rectangle((lo[0], lo[2]), hi[0] - lo[0], hi[2] - lo[2], fill=False, ls="--", color="0.5",
                               label="world bounds"))
    ax.set_aspect("equal", adjustable="datalim")
    ax.invert_yaxis()  # seen from above with x to the right, +z points down the page
    ax.set_xlabel("x (m)")
    ax.set_ylabel("z (m)")
    ax.set_title(f"Top view: {drawn} animals' trajectories (species, uid; ○ start, ▲ end)")
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.grid(alpha=0.3)
    fig.savefig(path)


PLOTS: dict[str, Callable] = {"order": plot_order, "nn_hist": plot_nn_hist, "groups": plot_groups,
                              "population": plot_population, "occupancy": plot_occupancy, "tracks": plot_tracks}


# ------------------------------------------------------------------------------------------------ page
def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _summary_tables(summary: dict) -> list[str]:
    header, rows = species_table(summary)
    states = [states_text(s) or "–" for s in summary["species"].values()]
    parts = [_table(header + ["states at the end"], [row + [st] for row, st in zip(rows, states)]),
             "<h3>Metrics: final value and mean over the run</h3>"]
    header, rows = metrics_table(summary)
    parts.append(_table(header, rows) if rows else "<p class='none'>No metric samples in this recording.</p>")
    return parts


STYLE = """body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#f2f2f2}img{max-width:100%}
.none{color:#777;font-style:italic;border-left:3px solid #ccc;padding-left:.6em}figure{margin:1em 0 2em}"""


def _page(rec, summary: dict, views: dict[str, Optional[str]]) -> str:
    run = [("scenario", summary["scenario"]), ("seed", summary["seed"]), ("steps", summary["steps"]),
           ("dt", f"{summary['dt']:.4g} s"), ("simulated time", f"{summary['duration_s']:.4g} s"),
           ("frames", f"{summary['frames']} (every {summary['every']} steps, {summary['precision']})"),
           ("complete", "yes" if summary.get("complete", True) else "no: the writer stopped early"),
           ("events", ", ".join(f"{k} {v}" for k, v in summary["events"].items()) or "none")]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>Starling report: "
             f"{html.escape(str(summary['scenario']))}</title><style>{STYLE}</style></head><body>",
             f"<h1>Starling report: {html.escape(str(summary['scenario']))}</h1>",
             f"<p>{html.escape(str(summary.get('file', '')))}</p><table>",
             *[f"<tr><th>{k}</th><td>{html.escape(str(v))}</td></tr>" for k, v in run], "</table>",
             "<h2>Summary</h2>", *_summary_tables(summary)]
    if summary["entities"]:
        ent = ", ".join(f"{k} {v['final']}" for k, v in summary["entities"].items())
        parts.append(f"<p>Other populations at the end: {html.escape(ent)}.</p>")
    for stem, title, caption in VIEWS:
        parts.append(f"<h2>{html.escape(title)}</h2>")
        missing = views.get(stem)
        if missing is None:
            parts.append(f"<figure><img src='{stem}.png' alt='{html.escape(title)}'>"
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        else:
            parts.append(f"<p class='none'>Not drawn: {html.escape(missing)}.</p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_report(rec, out: Union[str, Path]) -> dict[str, Optional[str]]:
    """Write ``out/index.html`` and the views' PNGs; returns each view's reason for not being drawn, or None.

    Raises :class:`~starling.recording.RecordingError` when a part of the recording cannot be read.

    ``out`` is created when missing; files of an earlier report there are replaced, and
    the PNG of a view that has no data this time is removed so the page never shows
    a stale one.
    """
    rec = checked(rec)  # a damaged chunk is one RecordingError naming the file
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(rec)
    views: dict[str, Optional[str]] = {}
    for stem, _, _ in VIEWS:
        target = out / f"{stem}.png"
        try:
            PLOTS[stem](rec, target)
            views[stem] = None
        except NoData as e:
            target.unlink(missing_ok=True)
            views[stem] = str(e)
    (out / "index.html").write_text(_page(rec, summary, views), encoding="utf-8")
    return views
