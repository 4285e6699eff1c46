"""Legibility of every widget in JupyterLab's Light and Dark themes, measured in Chromium.

One throwaway JupyterLab per theme (the theme is a user setting, so it is in force before the
page loads) runs a notebook this test writes: a local session, the ``SettlementSelector``, a
``ChannelStatusPanel`` in dispute, and a ``SettlementDashboard`` whose action log holds an
``ok``, an ``error`` and an ``info`` line, whose routes table is shown and whose progress line
has collapsed. The same server then serves the notebook as a Voila app in the same theme.
For the dashboard on each of its three methods (and in Voila), every visible text element
inside the widgets is measured with ``getComputedStyle``:

* its font size is at least 12 px;
* the WCAG 2.x contrast ratio of its colour (with its alpha and its ancestors' opacity) against
  its effective background (the ancestors' background colours composed from the first opaque
  one) is at least 4.5:1 (AA for body text);
* a button's label is not cut off (no ellipsis: its content fits its box).

Disabled buttons are measured for truncation only: WCAG 1.4.3 exempts inactive controls.
What was measured goes to ``test-artifacts/theme-*.json`` and screenshots beside it.
Synchronisation is on what the page shows, never on sleeps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_helpers import ARTIFACTS, Lab, LoopbackPage, start_lab
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: generous: two CPU cores shared with other test runs, and the kernel starts a sandbox
T = 240_000
NOTEBOOK = "theme_demo.ipynb"
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
MIN_FONT_PX = 12.0
MIN_CONTRAST = 4.5

CID = "0x" + "ab" * 32
TX = "0x" + "cd" * 32
CELLS = [
    "import dataclasses, socket, warnings\n"
    "warnings.filterwarnings('ignore', category=DeprecationWarning)\n"
    "from settlement_widgets.dashboard import SettlementDashboard\n"
    "from settlement_widgets.notebook import open_session\n"
    "from settlement_widgets.widgets import ChannelStatusPanel, SettlementSelector\n"
    "session = await open_session(aggregator=True)",
    "selector = SettlementSelector(selected='channel', network=session.network)\nselector",
    "panel = ChannelStatusPanel.from_props({\n"
    f"    'channelId': '{CID}', 'channelStatus': 'dispute', 'stateIntent': 'OPERATE',\n"
    "    'stateVersion': 3, 'stateHash': '0x' + '12' * 32,\n"
    "    'adjudicator': session.network.contracts.adjudicator, 'challengePeriod': 3600,\n"
    f"    'settlementTx': '{TX}', 'provider': 'channel',\n"
    "    'providerMetadata': {'erc7824': {'proofsCount': 2, 'nonce': 7}},\n"
    "}, network=session.network)\n"
    "panel",
    # a faucet nobody answers: the faucet action fails, so the log holds an error line too
    "with socket.socket() as probe:\n"
    "    probe.bind(('127.0.0.1', 0))\n"
    "    port = probe.getsockname()[1]\n"
    "refused = dataclasses.replace(\n"
    "    session.network, faucet_url=f'http://127.0.0.1:{port}/faucet/requestTokens'\n"
    ")\n"
    "dashboard = SettlementDashboard(\n"
    "    refused, session.user, operator=session.operator, selected='aggregator'\n"
    ")\n"
    "dashboard",
    "dashboard.click('show_routes')\n"
    "await dashboard.wait_idle()\n"
    "dashboard.click('faucet')\n"
    "await dashboard.wait_idle()\n"
    "dashboard.click('transfer')  # no channel: not available, an info line\n"
    "print('log levels:', ' '.join(line.level for line in dashboard.activity))",
]

#: Measures every visible text element under the roots; returns one record per element.
MEASURE_JS = """
(roots) => {
  const parse = (value) => {
    let m = value.match(/^rgba?\\(([^)]*)\\)$/);
    if (m) {
      const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = value.match(/^color\\(srgb ([^)]*)\\)$/);
    if (m) {
      const p = m[1].split(/[\\s\\/]+/).filter(Boolean).map(Number);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    throw new Error('unparsed colour: ' + value);
  };
  const over = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => {
      const s = v / 255;
      return s <= 0.04045 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let result = [255, 255, 255, 1];  // the canvas, when no ancestor is opaque
    for (let i = layers.length - 1; i >= 0; i--) result = over(layers[i], result);
    return result;
  };
  const opacity = (el) => {
    let o = 1;
    for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
    return o;
  };
  const seen = new Set();
  const out = [];
  for (const root of roots) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      if (seen.has(el)) continue;
      seen.add(el);
      if (['STYLE', 'SCRIPT', 'TEMPLATE'].includes(el.tagName)) continue;
      const own = [...el.childNodes]
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent)
        .join('')
        .trim();
      if (!own) continue;
      const rect = el.getBoundingClientRect();
      if (rect.width === 0 || rect.height === 0) continue;
      if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
      const cs = getComputedStyle(el);
      const bg = background(el);
      const fg = parse(cs.color);
      const shown = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
      const [hi, lo] = [luminance(shown), luminance(bg)].sort((a, b) => b - a);
      const button = el.closest('button');
      out.push({
        text: own.slice(0, 60),
        tag: el.tagName.toLowerCase(),
        cls: String(el.className || '').slice(0, 80),
        fontPx: parseFloat(cs.fontSize),
        color: cs.color,
        background: 'rgb(' + bg.slice(0, 3).map(Math.round).join(', ') + ')',
        contrast: (hi + 0.05) / (lo + 0.05),
        disabled: Boolean(button && button.disabled),
        truncated: el.tagName === 'BUTTON' && el.scrollWidth > el.clientWidth + 1,
      });
    }
  }
  return out;
}
"""


def _write_notebook(root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]  # no outputs, no widget state
    nbformat.write(nb, root / NOTEBOOK)


@pytest.fixture(scope="module", params=list(THEMES))
def themed_lab(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Lab]]:
    """A JupyterLab whose user settings choose the theme, serving the test notebook."""
    key: str = request.param
    tmp = tmp_path_factory.mktemp(f"theme-{key}")
    root = tmp / "root"
    root.mkdir()
    _write_notebook(root)
    env = {
        "SETTLEMENT_NETWORK": "local",
        "SETTLEMENT_API_NETWORK": "local",
        "SETTLEMENT_HOME": str(tmp / "home"),
    }
    settings: dict[str, dict[str, object]] = {
        "@jupyterlab/apputils-extension:themes": {"theme": THEMES[key]},
        # every cell in the DOM (no virtual scrolling), so every widget can be measured
        "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    }
    with start_lab(tmp, root, env, settings) as lab:
        yield key, lab


def _run_all(page: Page, lab: Lab, theme: str) -> None:
    page.goto(lab.page_url(f"lab/workspaces/theme-{theme}/tree/{NOTEBOOK}"))
    expect(page.locator("body")).to_have_attribute("data-jp-theme-name", THEMES[theme])
    expect(page.locator("body")).to_have_attribute(
        "data-jp-theme-light", "true" if theme == "light" else "false"
    )
    expect(page.locator(".jp-Notebook .jp-Cell").first).to_be_visible()
    # the execution indicator can say idle before the session is connected; the status bar
    # text only appears once the kernel is really there
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Python 3 (ipykernel) | Idle")
    assert page.locator(".sw-dashboard").count() == 0  # cleared: nothing before a run
    page.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()
    traceback = page.locator(".jp-OutputArea-output:has-text('Traceback (most recent call last)')")
    done = page.locator(".jp-OutputArea-output:has-text('log levels: ok ok ok ok error info')")
    expect(done.or_(traceback).first).to_be_visible(timeout=T)
    if traceback.count():
        pytest.fail("a cell failed in JupyterLab:\n" + traceback.first.inner_text()[-3000:])


def _measure(page: Page, theme: str, state: str) -> list[dict[str, Any]]:
    """Measure every widget's text and fail with the offenders; keep the record."""
    roots = page.locator(".jp-OutputArea-output :is(.sw-selector, .sw-status-panel, .sw-dashboard)")
    records: list[dict[str, Any]] = roots.evaluate_all(MEASURE_JS)
    (ARTIFACTS / f"theme-{theme}-{state}.json").write_text(json.dumps(records, indent=1))
    page.screenshot(path=str(ARTIFACTS / f"theme-{theme}-{state}.png"), full_page=True)
    page.locator(".jp-OutputArea-output .sw-dashboard").screenshot(
        path=str(ARTIFACTS / f"theme-{theme}-{state}-dashboard.png")
    )
    small = [r for r in records if r["fontPx"] < MIN_FONT_PX]
    faint = [r for r in records if not r["disabled"] and r["contrast"] < MIN_CONTRAST]
    cut = [r for r in records if r["truncated"]]
    problems = [
        *(f"font {r['fontPx']}px < 12px: {r['text']!r} ({r['tag']}.{r['cls']})" for r in small),
        *(
            f"contrast {r['contrast']:.2f} < 4.5: {r['text']!r} {r['color']} on "
            f"{r['background']} ({r['tag']}.{r['cls']})"
            for r in faint
        ),
        *(f"label cut off: {r['text']!r}" for r in cut),
    ]
    assert not problems, f"{theme} theme, {state}:\n" + "\n".join(problems)
    return records


def test_every_widget_text_is_legible_in_the_theme(
    themed_lab: tuple[str, Lab], loopback_page: LoopbackPage
) -> None:
    theme, lab = themed_lab
    page = loopback_page.page
    page.set_default_timeout(T)
    _run_all(page, lab, theme)

    dashboard = page.locator(".jp-OutputArea-output .sw-dashboard")
    expect(dashboard.locator(".sw-routes-table table")).to_be_visible()
    # routes ranked, approve, bridge, DONE; the refused faucet; the transfer not available
    expect(dashboard.locator(".sw-log-line")).to_have_count(6)
    records = _measure(page, theme, "aggregator")
    # the routes come from the sandbox's route server, and the card says so
    expect(dashboard.locator(".sw-card-body[data-method='aggregator'] .sw-pill")).to_have_text(
        "local"
    )
    texts = " ".join(r["text"] for r in records)
    # the measure saw the parts that matter (it cannot pass by measuring nothing)
    for expected in ("DISPUTE", "Settlement Method", "You receive", "not available"):
        assert expected in texts, f"{expected!r} was not measured"

    selector = dashboard.locator(".sw-selector")
    for method, shown in (("channel", ".sw-actions-channel"), ("v4", ".sw-status[data-mode='v4']")):
        selector.locator(f"button.sw-card-{method}").click()
        expect(selector.locator(".sw-card-body[data-selected='true']")).to_have_attribute(
            "data-method", method
        )
        expect(dashboard.locator(shown)).to_be_visible()
        records = _measure(page, theme, method)
        if method == "channel":
            labels = {r["text"] for r in records if r["tag"] == "button"}
            assert {"Faucet", "Open channel", "Close channel"} <= labels, labels
            assert any(t.startswith("Transfer 1 ") for t in labels), labels


def test_every_widget_text_is_legible_in_voila(
    themed_lab: tuple[str, Lab], loopback_page: LoopbackPage
) -> None:
    """The same notebook as a Voila app, in Voila's light or dark theme (``?theme=``)."""
    theme, lab = themed_lab
    page = loopback_page.page
    page.set_default_timeout(T)
    page.goto(lab.page_url(f"voila/render/{NOTEBOOK}") + f"&theme={theme}")
    expect(page.locator("body")).to_have_attribute("data-jp-theme-name", THEMES[theme])
    traceback = page.locator(".jp-OutputArea-output:has-text('Traceback (most recent call last)')")
    done = page.locator(".jp-OutputArea-output:has-text('log levels: ok ok ok ok error info')")
    expect(done.or_(traceback).first).to_be_visible(timeout=T)
    if traceback.count():
        pytest.fail("a cell failed in Voila:\n" + traceback.first.inner_text()[-3000:])
    dashboard = page.locator(".jp-OutputArea-output .sw-dashboard")
    expect(dashboard.locator(".sw-log-line")).to_have_count(6)
    expect(dashboard.locator(".sw-routes-table table")).to_be_visible()
    records = _measure(page, f"voila-{theme}", "aggregator")
    assert "DISPUTE" in " ".join(r["text"] for r in records)
