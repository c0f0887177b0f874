// console_test.js -- drives Debian's chromium with puppeteer-core through `infera serve --ui`'s console:
// the page renders, its live values follow the server (requests sent after the page loaded show up in
// its counters; its drift numbers are the ones /metrics exports), no console error; a screenshot is
// saved.  Usage: node console_test.js CHROMIUM URL RECORDS_JSON SCREENSHOT
'use strict';
const puppeteer = require('puppeteer-core');
const fs = require('fs');
const [chromium, url, recordsFile, shot] = process.argv.slice(2);

function fail(msg) { console.error('FAIL: ' + msg); process.exit(1); }

async function cellNumber(page, selector) {
  return page.$eval(selector, e => Number(e.textContent)).catch(() => NaN);
}

(async () => {
  const browser = await puppeteer.launch({executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']});
  const errors = [];
  try {
    const page = await browser.newPage();
    page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', e => errors.push(String(e)));
    page.on('requestfailed', r => errors.push('request failed: ' + r.url()));
    const t0 = Date.now();
    await page.goto(url + '/ui', {waitUntil: 'load'});
    const loadMs = Date.now() - t0;
    await page.waitForFunction(() => document.getElementById('status').textContent === 'live', {timeout: 10000});
    await page.waitForSelector('#models tr[data-model="fraud"]', {timeout: 5000});
    const row = '#traffic tr[data-model="fraud"]';
    await page.waitForSelector(row, {timeout: 5000});
    const before = await cellNumber(page, row + ' td.success');
    if (!(before >= 0)) fail('no request counter for fraud');
    // requests after the page loaded: the counter must follow
    const body = fs.readFileSync(recordsFile);
    const n = 5;
    for (let i = 0; i < n; i++) {
      const r = await fetch(url + '/v2/models/fraud/records', {method: 'POST', body: body,
        headers: {'Content-Type': 'application/json'}});
      if (!r.ok) fail('records request: HTTP ' + r.status);
    }
    await page.waitForFunction((sel, want) => Number(document.querySelector(sel)?.textContent) >= want,
      {timeout: 10000}, row + ' td.success', before + n).catch(() => fail('the request counter did not follow'));
    const after = await cellNumber(page, row + ' td.success');
    if (after !== before + n) fail(`requests: page shows ${after}, want ${before + n}`);
    // the drift table shows what /metrics exports
    const psiSel = '.drift-model[data-model="fraud"] tr[data-feature="distance_from_home_km"] td.psi';
    await page.waitForSelector(psiSel, {timeout: 10000}).catch(() => fail('no drift row'));
    await new Promise(r => setTimeout(r, 2500)); // the window's drift is refreshed once a second
    const metrics = await (await fetch(url + '/metrics')).text();
    const m = metrics.match(/infera_feature_drift\{model="fraud",version="[^"]+",feature="distance_from_home_km",metric="psi"\} (\S+)/);
    if (!m) fail('no psi gauge on /metrics');
    const shown = await cellNumber(page, psiSel);
    if (!(Math.abs(shown - Number(m[1])) < 1e-4 * Math.max(1, Number(m[1])) + 5e-5))
      fail(`psi: page ${shown}, /metrics ${m[1]}`);
    if (!(shown > 0.25)) fail('the shifted feature shows no drift: ' + shown);
    const bars = await page.$$eval('.drift-model svg rect', rs => rs.length);
    const sparks = await page.$$eval('#traffic svg.spark polyline', ps => ps.length);
    if (bars < 10 || sparks < 2) fail(`charts: ${bars} drift bars, ${sparks} sparklines`);
    const external = await page.$$eval('script[src], link[href], img[src]',
      es => es.filter(e => !(e.getAttribute('src') || e.getAttribute('href')).startsWith('data:')).length);
    if (external) fail('the page loads external assets');
    await page.screenshot({path: shot, fullPage: true});
    if (errors.length) fail('console errors: ' + errors.join(' | '));
    console.log(`console: loaded in ${loadMs} ms; requests ${before} -> ${after}; psi ${shown} = /metrics; ` +
                `${bars} drift bars, ${sparks} sparklines; screenshot ${shot}`);
  } finally {
    await browser.close();
  }
})().catch(e => fail(String(e && e.stack || e)));
