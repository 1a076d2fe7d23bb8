"""skyjo-web in a real headless Chromium (Debian's chromium, driven by Selenium): a person's
game played to the end through clicks, a hint shown, an assistant question answered, a
replay stepped through.

Each test saves a screenshot of its view; with ``SKYJO_WEB_SCREENSHOTS=DIR`` set they go
to DIR (``docs/img`` for the docs' pictures), else to a temporary directory. Without
chromium these tests skip here, and fail under CI (``CI=true``), where ``make setup``
installs it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from web_browser import browser_missing, chromium, live_server
from web_replays import write_replays

pytestmark = pytest.mark.slow

_missing = browser_missing()
if _missing is not None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests need chromium under CI: {_missing}", pytrace=False)
    pytest.skip(f"browser tests skipped: {_missing}", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from agents.web.server import WebSettings  # noqa: E402

WAIT_S = 60


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    chosen = os.environ.get("SKYJO_WEB_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    replays = tmp_path_factory.mktemp("browser-replays")
    write_replays(replays, count=2)
    with live_server(WebSettings(replays_dir=replays)) as url:
        yield url


@pytest.fixture(scope="module")
def driver():
    with chromium() as browser:
        yield browser


def wait(driver, condition, timeout=WAIT_S):
    return WebDriverWait(driver, timeout).until(condition)


def open_page(driver, site):
    driver.get(site)
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#play-rules option"))


def visible(driver, element_id):
    found = driver.find_elements(By.ID, element_id)
    return bool(found) and found[0].is_displayed()


def start_game(driver, rules="official", seed=None, opponent=None):
    Select(driver.find_element(By.ID, "play-rules")).select_by_value(rules)
    if seed is not None:
        field = driver.find_element(By.ID, "play-seed")
        field.clear()
        field.send_keys(str(seed))
    if opponent is not None:
        field = driver.find_element(By.CSS_SELECTOR, "#play-agents input")
        field.clear()
        field.send_keys(opponent)
    driver.find_element(By.ID, "play-start").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#play-table .legal"))


def click_first_legal(driver):
    """Click the first highlighted card or pile and wait for the table to be redrawn."""
    target = driver.find_elements(By.CSS_SELECTOR, "#play-table .legal")[0]
    target.click()
    wait(driver, EC.staleness_of(target))


def test_browser__a_person_plays_a_game_to_the_end_through_clicks(driver, site, shots):
    open_page(driver, site)
    start_game(driver, rules="single_round", seed=21, opponent="ev")
    clicks = 0
    rounds_seen = 0
    over_text = ""
    while True:
        if visible(driver, "modal"):
            rounds_seen += bool(driver.find_elements(By.ID, "round-result"))
            over = driver.find_elements(By.ID, "game-over")
            over_text = over[0].text if over else ""
            driver.find_element(By.ID, "modal-close").click()
            if over:
                break
            continue
        if clicks == 8:
            driver.save_screenshot(str(shots / "web-play.png"))
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#play-table .legal")
             or visible(d, "modal"))
        if visible(driver, "modal"):
            continue
        click_first_legal(driver)
        clicks += 1
        assert clicks < 300, "the game did not end"
    assert rounds_seen == 1
    assert "Game over" in over_text and ("win" in over_text or "won" in over_text)
    assert "Game over" in driver.find_element(By.ID, "play-prompt").text


def test_browser__a_hint_lists_every_legal_move_with_values(driver, site, shots):
    open_page(driver, site)
    start_game(driver, seed=5)  # official rules: the default network, 2 players
    while "Draw from the draw pile" not in driver.find_element(By.ID, "play-prompt").text:
        click_first_legal(driver)
    legal = len(driver.find_elements(By.CSS_SELECTOR, "#play-table .legal"))
    driver.find_element(By.ID, "hint-button").click()
    rows = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#play-hint .hint-row"))
    assert len(rows) == legal == 2
    assert "±" in driver.find_element(By.ID, "play-hint").text
    assert "Odds" in driver.find_element(By.ID, "play-hint").text
    assert len(driver.find_elements(By.CSS_SELECTOR, "#play-hint .hint-row.best")) == 1
    driver.save_screenshot(str(shots / "web-hint.png"))


def test_browser__the_assistant_answers_and_names_a_bad_field(driver, site, shots):
    open_page(driver, site)
    driver.find_element(By.ID, "tab-assistant").click()
    cell = driver.find_element(By.CSS_SELECTOR, "#assist-grids input[data-field='my_grid[1]']")
    cell.clear()
    cell.send_keys("13")
    driver.find_element(By.ID, "assist-ask").click()
    error = wait(driver, lambda d: d.find_element(By.ID, "assist-error").text)
    assert "my_grid[1]" in error
    assert "bad" in cell.get_attribute("class")
    cell.clear()
    cell.send_keys("-2")
    driver.find_element(By.ID, "assist-ask").click()
    answer = wait(driver, lambda d: d.find_elements(By.ID, "assist-recommendation"))
    assert answer[0].text.startswith("Best move:") and "value" in answer[0].text
    assert driver.find_element(By.ID, "assist-error").text == ""
    driver.save_screenshot(str(shots / "web-assistant.png"))


def test_browser__a_replay_is_stepped_through(driver, site, shots):
    open_page(driver, site)
    driver.find_element(By.ID, "tab-watch").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#replay-select option[value$='.json']"))
    Select(driver.find_element(By.ID, "replay-select")).select_by_index(0)
    driver.find_element(By.ID, "replay-open").click()
    position = driver.find_element(By.ID, "watch-position")
    wait(driver, lambda d: position.text.startswith("move 0 / "))
    total = int(position.text.split("/ ")[1])
    for expected in (1, 2, 3):
        driver.find_element(By.ID, "watch-step").click()
        wait(driver, lambda d, n=expected: position.text.startswith(f"move {n} / "))
    driver.find_element(By.ID, "watch-back").click()
    wait(driver, lambda d: position.text.startswith("move 2 / "))
    driver.execute_script("document.getElementById('watch-speed').value = 50;")
    driver.find_element(By.ID, "watch-play").click()
    wait(driver, lambda d: int(position.text.split()[1]) >= 12)
    driver.find_element(By.ID, "watch-play").click()  # pause
    paused_at = int(position.text.split()[1])
    assert 12 <= paused_at <= total
    driver.find_element(By.ID, "watch-peek").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#watch-table .card.peek")
         or int(position.text.split()[1]) == total)
    driver.save_screenshot(str(shots / "web-watch.png"))
    driver.find_element(By.ID, "watch-first").click()
    wait(driver, lambda d: position.text.startswith("move 0 / "))
