// registry_console_test.js -- drives Debian's chromium with puppeteer-core through `infera ui --home DIR`:
// the console's registry views render what the registry's tables hold (EXPECTED_JSON, read with python's
// sqlite3 by test_monitor_ui_registry.sh): one row per model with its latest version, live versions and
// aliases; the lineage graph of the selected model (training data -> versions -> uses as SVG nodes and
// edges); the audit log newest first, in pages of 50 walked with the older / newer buttons.  No console error, no
// external asset; screenshots of the page saved.  Usage: node registry_console_test.js CHROMIUM URL EXPECTED_JSON
// SHOT_PREFIX
'use strict';
const puppeteer = require('puppeteer-core');
const fs = require('fs');
const [chromium, url, expectedFile, shotPrefix] = process.argv.slice(2);
const want = JSON.parse(fs.readFileSync(expectedFile, 'utf8'));

function fail(msg) {
    console.error('FAIL: ' + msg);
    process.exit(1);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

(async () => {
    const browser = await puppeteer.launch({
        executablePath : chromium,
        headless : true,
        args : [ '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage' ]
    });
    const errors = [];
    try {
        const page = await browser.newPage();
        await page.setViewport({width : 1280, height : 900});
        page.on('console', m => {
            if (m.type() === 'error') errors.push(m.text());
        });
        page.on('pageerror', e => errors.push(String(e)));
        page.on('requestfailed', r => errors.push('request failed: ' + r.url()));
        await page.goto(url + '/ui', {waitUntil : 'load'});
        await page.waitForFunction(() => document.getElementById('status').textContent === 'live', {timeout : 10000});
        await page.waitForSelector('#registry tbody tr', {timeout : 10000}).catch(() => fail('no registry rows'));
        // models: name, latest, live versions, aliases
        const rows =
            await page.$$eval('#registry tbody tr', trs => trs.map(tr => [...tr.children].map(td => td.textContent)));
        const got = rows.map(r => ({name : r[0], latest : Number(r[1]), live : Number(r[2]), aliases : r[3]}));
        if (!same(got, want.models))
            fail('registry table: ' + JSON.stringify(got) + ' want ' + JSON.stringify(want.models));
        // lineage of the first model (selected at load): nodes and edges
        await page.waitForSelector('#lineage-graph g.node', {timeout : 10000}).catch(() => fail('no lineage graph'));
        await page.select('#linsel', want.lineage.model);
        await page
            .waitForFunction(m => [...document.querySelectorAll('#lineage-graph g.node.version')].some(
                                 g => g.dataset.label.startsWith(m + '@')),
                             {timeout : 10000}, want.lineage.model)
            .catch(() => fail('the lineage of ' + want.lineage.model + ' did not render'));
        const nodes =
            await page.$$eval('#lineage-graph g.node', gs => gs.map(g => [g.getAttribute('class'), g.dataset.label]));
        const byKind = k => nodes.filter(n => n[0] === 'node ' + k).map(n => n[1]).sort();
        const gotLin = {data : byKind('data'), versions : byKind('version'), uses : byKind('use')};
        const wantLin = {
            data : want.lineage.data.slice().sort(),
            versions : want.lineage.versions.slice().sort(),
            uses : want.lineage.uses.slice().sort()
        };
        if (!same(gotLin, wantLin))
            fail('lineage nodes: ' + JSON.stringify(gotLin) + ' want ' + JSON.stringify(wantLin));
        const edges = await page.$$eval('#lineage-graph line.edge', ls => ls.length);
        if (edges !== want.lineage.edges) fail(`lineage edges: ${edges}, want ${want.lineage.edges}`);
        await page.screenshot({path : shotPrefix + '_lineage.png', fullPage : true});
        // audit log: every record, newest first
        await page.waitForSelector('#audit tbody tr', {timeout : 10000}).catch(() => fail('no audit rows'));
        const audit = await page.$$eval(
            '#audit tbody tr',
            trs => trs.map(
                tr => [Number(tr.children[0].textContent), tr.children[3].textContent, tr.children[4].textContent]));
        if (!same(audit, want.audit))
            fail('audit: ' + JSON.stringify(audit.slice(0, 5)) + '... (' + audit.length + ') want ' +
                 JSON.stringify(want.audit.slice(0, 5)) + '... (' + want.audit.length + ')');
        // the audit log in pages of 50: older / newer walk them, each page the registry's rows
        const auditRows = () => page.$$eval(
            '#audit tbody tr',
            trs => trs.map(
                tr => [Number(tr.children[0].textContent), tr.children[3].textContent, tr.children[4].textContent]));
        const pages = want.audit_pages || [];
        for (let i = 1; i < pages.length; i++) {
            await page.click('#older');
            await page
                .waitForFunction(s => document.querySelector('#audit tbody tr') &&
                                      document.querySelector('#audit tbody tr').dataset.seq === String(s),
                                 {timeout : 10000}, pages[i][0][0])
                .catch(() => fail('audit page ' + (i + 1) + ' did not render'));
            const got = await auditRows();
            if (!same(got, pages[i]))
                fail('audit page ' + (i + 1) + ': ' + JSON.stringify(got.slice(0, 3)) + '... (' + got.length +
                     ') want ' + JSON.stringify(pages[i].slice(0, 3)) + '...');
            const older = await page.$eval('#older', b => b.disabled);
            if (older !== (i === pages.length - 1)) fail('audit page ' + (i + 1) + ': older button disabled=' + older);
        }
        if (pages.length > 1) {
            await page.click('#newer');
            await page
                .waitForFunction(s => document.querySelector('#audit tbody tr').dataset.seq === String(s),
                                 {timeout : 10000}, pages[pages.length - 2][0][0])
                .catch(() => fail('audit: newer did not go back a page'));
        }
        // quality over time: the stored history of every version of the first model, one point per window
        // and metric, its value the stored one
        await page.waitForSelector('#quality svg.qchart circle.qpt', {timeout : 15000})
            .catch(() => fail('no quality chart'));
        const qpts = await page.$$eval(
            '#quality svg.qchart circle.qpt',
            cs => cs.map(c => [c.closest('svg').dataset.version, c.dataset.metric, c.dataset.start, Number(c.dataset.value)]));
        qpts.sort((a, b) => JSON.stringify(a) < JSON.stringify(b) ? -1 : 1);
        const wantQ = (want.quality || []).slice().sort((a, b) => JSON.stringify(a) < JSON.stringify(b) ? -1 : 1);
        // cJSON prints a double with 15 digits when they read back within an ulp: compare to 1e-12
        const near = (p, w) => w && same(p.slice(0, 3), w.slice(0, 3)) && Math.abs(p[3] - w[3]) <= 1e-12 * Math.max(1, Math.abs(w[3]));
        if (qpts.length !== wantQ.length || !qpts.every((p, i) => near(p, wantQ[i]))) {
            const k = qpts.findIndex((p, i) => !near(p, wantQ[i]));
            fail('quality points (' + qpts.length + ', want ' + wantQ.length + '): first difference ' +
                 JSON.stringify(qpts[k]) + ' want ' + JSON.stringify(wantQ[k]));
        }
        const lines = await page.$$eval('#quality svg.qchart g.qseries polyline', ls => ls.length);
        if (lines !== 12) fail(`quality lines: ${lines}, want 12 (6 metrics x 2 versions)`);
        await page.$eval('#quality', e => e.scrollIntoView());
        await page.screenshot({path : shotPrefix + '_quality.png', fullPage : true});
        const external = await page.$$eval(
            'script[src], link[href], img[src]',
            es => es.filter(e => !(e.getAttribute('src') || e.getAttribute('href')).startsWith('data:')).length);
        if (external) fail('the page loads external assets');
        await page.screenshot({path : shotPrefix + '.png', fullPage : true});
        if (errors.length) fail('console errors: ' + errors.join(' | '));
        console.log(`registry console: ${got.length} models, lineage ${nodes.length} nodes / ${edges} edges, ` +
                    `quality ${qpts.length} points, ` +
                    `${audit.length} audit records on page 1 of ${pages.length || 1}; screenshots ${shotPrefix}*.png`);
    } finally {
        await browser.close();
    }
})().catch(e => fail(String(e && e.stack || e)));
