"""``robofollow report --html`` in real headless Chromium (Debian's chromium + chromedriver, driven by Selenium).

The page must load without console errors, show Table 1 and the plot, and every episode video must play.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from pathlib import Path

import pytest

from robofollow_ros.cli import main

pytestmark = pytest.mark.sim

CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
CHROMIUM_FLAGS = (
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--window-size=1400,1000',
)

PLAY_VIDEOS = """
const done = arguments[arguments.length - 1];
const videos = [...document.querySelectorAll('video')];
Promise.all(videos.map(video => new Promise(resolve => {
  const report = () => resolve({
    readyState: video.readyState, duration: video.duration, currentTime: video.currentTime,
    width: video.videoWidth, error: video.error ? video.error.code : null});
  video.addEventListener('timeupdate', () => { if (video.currentTime > 0.3) report(); });
  video.addEventListener('error', report);
  video.play().catch(error => resolve({error: String(error)}));
}))).then(done);
"""


def report_args(run: Path) -> list[str]:
    """``robofollow report --html`` of a run (the blind baseline for the mirage gap runs on its two trials)."""
    return ['report', str(run / 'results.jsonl'), '--html', '--out', str(run / 'report')]


def make_run(folder: Path) -> Path:
    """An evaluated run with videos and trajectory files, and its HTML report in ``folder/report``."""
    run = folder / 'run'
    args = ['eval', '--in-process', '--policy', 'expert', '--scene', '1', '--level', '0', '--tasks', 'pickup_yellow']
    assert main([*args, '--out', str(run), '--video', '--record', 'json', '--quiet']) == 0
    assert main(report_args(run)) == 0
    return run


def open_browser(profile: Path):
    """Headless Debian Chromium through chromedriver, fresh profile, console messages kept."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail('chromium and chromium-driver are missing: run scripts/setup.sh (it installs them)')
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f'--user-data-dir={profile}'):
        options.add_argument(flag)
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def check_page(run: Path, screenshot: Path, profile: Path) -> dict:
    """Serve ``run`` on localhost, open its report, play every video, save a screenshot; returns what was seen."""
    handler = functools.partial(QuietHandler, directory=str(run))
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = open_browser(profile)
    try:
        driver.set_script_timeout(60)
        driver.get(f'http://127.0.0.1:{server.server_address[1]}/report/index.html')
        seen = {
            'title': driver.title,
            'table_rows': driver.execute_script(
                "return [...document.querySelectorAll('table.table1 tbody tr')].map(r => r.cells[0].textContent)"
            ),
            'interval_rows': driver.execute_script(
                "return [...document.querySelectorAll('table.intervals tbody tr')].map(r => r.cells[1].textContent)"
            ),
            'gap_cells': driver.execute_script(
                "return [...document.querySelectorAll('table.gap tbody tr')].map(r => r.cells.length)"
            ),
            'trial_rows': driver.execute_script("return document.querySelectorAll('tr.trial').length"),
            'plot_width': driver.execute_script("return document.querySelector('img').naturalWidth"),
            'plot_shown': driver.execute_script(
                "const i = document.querySelector('img'); return [i.clientWidth, i.naturalWidth, innerWidth]"
            ),
            'image_widths': driver.execute_script(
                "return [...document.querySelectorAll('img')].map(i => i.naturalWidth)"
            ),
            'gap_rows': driver.execute_script(
                "return [...document.querySelectorAll('table.gap tbody tr')].map(r => r.cells[0].textContent)"
            ),
            'confusion_rows': driver.execute_script(
                "return document.querySelectorAll('table.confusion tbody tr').length"
            ),
            'videos': driver.execute_async_script(PLAY_VIDEOS),
        }
        driver.execute_script('window.scrollTo(0, 0)')
        driver.save_screenshot(str(screenshot))
        seen['errors'] = [entry for entry in driver.get_log('browser') if entry['level'] == 'SEVERE']
    finally:
        driver.quit()
        server.shutdown()
    return seen


def test_html_report_loads_and_plays_in_chromium(tmp_path):
    run = make_run(tmp_path)
    screenshot = tmp_path / 'report.png'
    seen = check_page(run, screenshot, tmp_path / 'profile')
    assert seen['errors'] == []
    assert seen['title'] == 'RoboFollow run run'
    assert seen['table_rows'] == ['S1', 'Mean']
    # Two trials, both complete: each interval is the no-spread bound below 100 %, e.g. 34.2–100.0.
    assert len(seen['interval_rows']) == 2 and all(text.count('–100.0') == 3 for text in seen['interval_rows'])
    assert seen['gap_cells'] == [7, 7]
    assert seen['trial_rows'] == len(seen['videos']) >= 2
    assert seen['plot_width'] > 100
    shown, natural, window = seen['plot_shown']
    assert shown >= min(natural, window - 60), seen['plot_shown']  # its text is legible: not shrunk below the page
    assert len(seen['image_widths']) == 2 and min(seen['image_widths']) > 100
    assert seen['gap_rows'] == ['L0', 'All'] and seen['confusion_rows'] == 1
    for video in seen['videos']:
        assert video['error'] is None and video['readyState'] >= 2, video
        assert video['duration'] > 1.0 and video['currentTime'] > 0.3 and video['width'] == 960
    import cv2

    image = cv2.imread(str(screenshot))
    assert image is not None and image.shape[0] > 500 and image.std() > 10


def test_report_links_point_at_existing_files(tmp_path):
    run = make_run(tmp_path)
    page = (run / 'report' / 'index.html').read_text()
    for record_file in ('videos/', 'episodes/'):
        assert f'../{record_file}' in page
    for link in [part.split('"')[0] for part in page.split('src="')[1:]]:
        assert (run / 'report' / link).resolve().exists(), link
    shutil.rmtree(run / 'videos')
    assert main(report_args(run)) == 0
