// console_load.js -- how long `infera serve --ui`'s console takes to load in Debian's chromium
// (puppeteer-core of tests/monitor/ui): navigation to the load event, and to the first render of the
// server's state (status "live", every served model in the models table), and -- with a registry --
// to the first render of its views (N_REGISTRY models in the registry table, the audit table filled,
// the lineage graph drawn, the quality chart drawn -- a page without the quality view, an older
// binary's, is not waited for it).  Usage:
//   node console_load.js CHROMIUM URL N_MODELS RUNS [SERVER_PID] [N_REGISTRY]
// Besides wall clock, each load's CPU time: user + system of every chromium process (the browser,
// its renderer, GPU and network processes, and the children they reaped) and of the server
// (SERVER_PID), from /proc: the work a load needs, which a loaded machine stretches in wall time but
// does not change -- on an idle 2-vCPU machine a load takes about that long (the critical path is
// mostly serial: request, parse, script, one state fetch, render).  And the renderer main thread's
// task / script / layout / style time of each load (puppeteer page.metrics()), medians.
'use strict';
const fs = require('fs');
const puppeteer = require('puppeteer-core');
const [chromium, url, nModels, runs, serverPid, nRegistry] = process.argv.slice(2);
const TCK = 100; // clock ticks per second (getconf CLK_TCK on Linux)

// CPU seconds of pid and its descendants (their own and their reaped children's)
function treeCpu(root) {
  const kids = {}, cpu = {};
  for (const d of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(d)) continue;
    let st;
    try { st = fs.readFileSync('/proc/' + d + '/stat', 'utf8'); } catch (e) { continue; }
    const f = st.slice(st.lastIndexOf(')') + 2).split(' '); // fields from the 3rd (state) on
    const ppid = f[1];
    (kids[ppid] = kids[ppid] || []).push(d);
    cpu[d] = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / TCK; // utime stime cutime cstime
  }
  let sum = 0;
  const walk = p => { sum += cpu[p] || 0; for (const k of kids[p] || []) walk(k); };
  walk(String(root));
  return sum;
}

(async () => {
  const browser = await puppeteer.launch({executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']});
  const load = [], live = [], full = [], cpu = [], blankLoad = [], blankCpu = [], main = [];
  const cpuNow = () => treeCpu(browser.process().pid) + (serverPid ? treeCpu(serverPid) : 0);
  try {
    for (let i = 0; i < Number(runs); i++) {
      const page = await browser.newPage();
      const c0 = cpuNow();
      const t0 = Date.now();
      await page.goto(url + '/ui', {waitUntil: 'load'});
      load.push(Date.now() - t0);
      await page.waitForFunction(n => document.getElementById('status').textContent === 'live' &&
        document.querySelectorAll('#models tbody tr').length >= n, {timeout: 20000, polling: 'mutation'}, Number(nModels));
      live.push(Date.now() - t0);
      if (Number(nRegistry) > 0) {
        await page.waitForFunction(n => document.querySelectorAll('#registry tbody tr').length >= n &&
          document.querySelectorAll('#audit tbody tr').length > 0 && document.querySelector('#lineage-graph') &&
          (!document.getElementById('quality') || document.querySelector('#quality svg.qchart')),
          {timeout: 20000, polling: 'mutation'}, Number(nRegistry));
        full.push(Date.now() - t0);
      }
      cpu.push(Math.round((cpuNow() - c0) * 1000));
      const pm = await page.metrics(); // the renderer's main thread, seconds since the tab opened
      main.push({task: Math.round(pm.TaskDuration * 1000), script: Math.round(pm.ScriptDuration * 1000),
                 layout: Math.round(pm.LayoutDuration * 1000), style: Math.round(pm.RecalcStyleDuration * 1000)});
      await page.close();
      // the control: a fresh tab loading a one-line page (what any page costs this browser here)
      const blank = await browser.newPage();
      const b0 = cpuNow(), tb = Date.now();
      await blank.goto('data:text/html,<p>x</p>', {waitUntil: 'load'});
      blankLoad.push(Date.now() - tb);
      blankCpu.push(Math.round((cpuNow() - b0) * 1000));
      await blank.close();
    }
  } finally {
    await browser.close();
  }
  const med = a => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
  console.log(JSON.stringify({runs: load.length, load_ms: load, live_ms: live, cpu_ms: cpu, load_median_ms: med(load),
    live_median_ms: med(live), full_ms: full, full_median_ms: full.length ? med(full) : null, cpu_median_ms: med(cpu), blank_load_ms: blankLoad, blank_cpu_ms: blankCpu,
    blank_load_median_ms: med(blankLoad), blank_cpu_median_ms: med(blankCpu),
    main_thread_median_ms: {task: med(main.map(m => m.task)), script: med(main.map(m => m.script)),
                            layout: med(main.map(m => m.layout)), style: med(main.map(m => m.style))}}));
})().catch(e => { console.error(e); process.exit(1); });
