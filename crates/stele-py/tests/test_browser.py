"""`stele serve` in a real browser: Debian's headless Chromium, driven by Selenium through
chromedriver (both installed by scripts/setup-browser.sh). Loads each page, follows the
pagination, runs a query with a facet, opens a hostile document, and checks what the page
shows (text in the DOM) and that the console logged no error.

Skipped when Chromium is missing, unless STELE_BROWSER_TEST=1 (scripts/check.sh sets it),
which makes a missing browser a failure. STELE_SCREENSHOTS=DIR saves screenshots of the main
pages there (docs/screenshots/ holds the ones the README shows).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import stele

HOSTILE = "<script>alert('x')</script>\"><img src=x onerror=alert(1)>"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
]


def _tools() -> tuple[str, str]:
    chromium = shutil.which("chromium") or ""
    driver = shutil.which("chromedriver") or ""
    try:
        import selenium  # noqa: F401
    except ImportError:
        driver = ""
    if not (chromium and driver):
        message = "Chromium, chromedriver or selenium missing: run scripts/setup-browser.sh and install requirements-dev.txt"
        if os.environ.get("STELE_BROWSER_TEST") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return chromium, driver


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A sample database served by `python -m stele serve`; yields its URL."""
    root = tmp_path_factory.mktemp("served")
    with stele.open(root / "shop") as db:
        people = db["people"]
        cities = ["Oslo", "Lima", "Pune"]
        with db.batch() as b:
            for i in range(120):
                tags = [t for k, t in enumerate(["red", "green", "blue"]) if i % (k + 2) == 0]
                b.put(
                    "people",
                    f"p{i:03}",
                    {
                        "name": f"person {i}",
                        "age": 20 + i % 50,
                        "city": cities[i % 3],
                        "tags": tags,
                        "address": {"street": f"{i} Main St", "zip": f"{i * 7:05}"},
                    },
                )
            b.put("evil", "e1", {"text": HOSTILE, HOSTILE: [HOSTILE]})
        people.create_index("age", name="by_age")
        del people
    stele.Table.build(
        ((f"key{i:02}", f"value {i}") for i in range(30)), root / "shop" / "lookup.stt"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "stele", "serve", str(root / "shop"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " at http://127.0.0.1:" in line, line + (proc.stderr.read() if proc.stderr else "")
    try:
        yield line.split(" at ")[1].split(" ")[0]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        finally:
            proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    chromium, driver_path = _tools()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="stele-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: object) -> list[dict]:
    return [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]  # type: ignore[attr-defined]


def shot(driver: object, name: str) -> None:
    folder = os.environ.get("STELE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))  # type: ignore[attr-defined]


def follow(driver: object, act: "object") -> None:
    """Runs `act` (a click or a submit that loads a page) and waits until the new page has
    replaced the old one: reading the DOM before that reads the old page, or a stale one."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")  # type: ignore[attr-defined]
    act()  # type: ignore[operator]
    WebDriverWait(driver, 20).until(expected_conditions.staleness_of(old))  # type: ignore[arg-type]


def test_pages_in_chromium(site: str, browser: object) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    d = browser
    d.get(site)  # type: ignore[attr-defined]
    body = d.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
    assert "Collections" in body and "people" in body and "by_age (age)" in body
    assert "lookup.stt" in body
    shot(d, "database")

    # The collection: follow "next page" to the end, collecting the ids shown.
    follow(d, d.find_element(By.LINK_TEXT, "people").click)  # type: ignore[attr-defined]
    assert "120 documents" in d.find_element(By.TAG_NAME, "main").text  # type: ignore[attr-defined]
    assert "address.zip" in d.find_element(By.TAG_NAME, "main").text  # type: ignore[attr-defined]
    shot(d, "collection")
    ids: list[str] = []
    while True:
        rows = d.find_elements(By.CSS_SELECTOR, "table.docs tbody tr td:first-child")  # type: ignore[attr-defined]
        ids += [r.text for r in rows]
        nxt = d.find_elements(By.CSS_SELECTOR, "a.next")  # type: ignore[attr-defined]
        if not nxt:
            break
        follow(d, nxt[0].click)
    assert ids == [f"p{i:03}" for i in range(120)]

    # Jump to an id, open the document, fold it with the script.
    d.get(site + "c/people")  # type: ignore[attr-defined]
    box = d.find_element(By.NAME, "jump")  # type: ignore[attr-defined]
    box.send_keys("p07")
    follow(d, box.submit)
    first = d.find_element(By.CSS_SELECTOR, "table.docs tbody tr td a")  # type: ignore[attr-defined]
    assert first.text == "p070"
    follow(d, first.click)
    tree = d.find_element(By.CSS_SELECTOR, ".tree")  # type: ignore[attr-defined]
    assert "person 70" in tree.text
    assert "stored" in d.find_element(By.TAG_NAME, "main").text  # type: ignore[attr-defined]
    shot(d, "document")
    d.find_element(By.CSS_SELECTOR, "button[data-tree=close]").click()  # type: ignore[attr-defined]
    assert d.execute_script("return document.querySelectorAll('.tree details[open]').length") == 0  # type: ignore[attr-defined]
    d.find_element(By.CSS_SELECTOR, "button[data-tree=open]").click()  # type: ignore[attr-defined]
    assert d.execute_script("return document.querySelectorAll('.tree details:not([open])').length") == 0  # type: ignore[attr-defined]

    # A query with a sort and a facet on an array field, then a click on a facet value.
    d.get(site + "c/people/query")  # type: ignore[attr-defined]
    d.find_element(By.NAME, "filter").send_keys('{"age": {"$gte": 60}}')  # type: ignore[attr-defined]
    d.find_element(By.NAME, "sort").send_keys("-age")  # type: ignore[attr-defined]
    d.find_element(By.NAME, "facet").send_keys("tags,city")  # type: ignore[attr-defined]
    follow(d, d.find_element(By.CSS_SELECTOR, "form.query button").click)  # type: ignore[attr-defined]
    main = d.find_element(By.TAG_NAME, "main").text  # type: ignore[attr-defined]
    assert "by_age" in main  # the plan
    facets = d.find_elements(By.CSS_SELECTOR, ".facet")  # type: ignore[attr-defined]
    assert [f.find_element(By.TAG_NAME, "h3").text for f in facets] == ["tags", "city"]
    shot(d, "query")
    first_row = d.find_element(By.CSS_SELECTOR, "table.rows tbody tr td")  # type: ignore[attr-defined]
    assert first_row.text.startswith("p")
    follow(d, facets[0].find_element(By.LINK_TEXT, "red").click)
    rows = d.find_elements(By.CSS_SELECTOR, "table.rows tbody tr td:last-child")  # type: ignore[attr-defined]
    assert rows and all('"red"' in r.text for r in rows)

    # The table beside the database: get a key, then browse a prefix.
    d.get(site)  # type: ignore[attr-defined]
    follow(d, d.find_element(By.LINK_TEXT, "lookup.stt").click)  # type: ignore[attr-defined]
    box = d.find_element(By.NAME, "key")  # type: ignore[attr-defined]
    box.send_keys("key07")
    follow(d, box.submit)
    assert "key key07: value 7" in d.find_element(By.TAG_NAME, "main").text  # type: ignore[attr-defined]

    # A hostile document shows as text: no alert, no image element.
    d.get(site + "c/evil/d/e1")  # type: ignore[attr-defined]
    assert HOSTILE in d.find_element(By.CSS_SELECTOR, ".tree").text  # type: ignore[attr-defined]
    assert d.find_elements(By.CSS_SELECTOR, "main img") == []  # type: ignore[attr-defined]
    with pytest.raises(NoAlertPresentException):
        d.switch_to.alert.text  # type: ignore[attr-defined]  # noqa: B018

    assert console_errors(d) == []
    # The console is really read: a page that is not there logs its 404 as an error.
    d.get(site + "c/nothing")  # type: ignore[attr-defined]
    assert "no collection" in d.find_element(By.TAG_NAME, "main").text  # type: ignore[attr-defined]
    assert any("404" in e.get("message", "") for e in console_errors(d))
