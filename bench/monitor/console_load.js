// console_load.js -- how long `infera serve --ui`'s console takes to load in Debian's chromium
// (puppeteer-core of tests/monitor/ui): navigation to the load event, and to the first render of the
// server's state (status "live", every served model in the models table).  Usage:
//   node console_load.js CHROMIUM URL N_MODELS RUNS
'use strict';
const puppeteer = require('puppeteer-core');
const [chromium, url, nModels, runs] = process.argv.slice(2);

(async () => {
  const browser = await puppeteer.launch({executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']});
  const load = [], live = [];
  try {
    for (let i = 0; i < Number(runs); i++) {
      const page = await browser.newPage();
      const t0 = Date.now();
      await page.goto(url + '/ui', {waitUntil: 'load'});
      load.push(Date.now() - t0);
      await page.waitForFunction(n => document.getElementById('status').textContent === 'live' &&
        document.querySelectorAll('#models tbody tr').length >= n, {timeout: 20000, polling: 'mutation'}, Number(nModels));
      live.push(Date.now() - t0);
      await page.close();
    }
  } finally {
    await browser.close();
  }
  const med = a => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
  console.log(JSON.stringify({runs: load.length, load_ms: load, live_ms: live, load_median_ms: med(load),
    live_median_ms: med(live)}));
})().catch(e => { console.error(e); process.exit(1); });
