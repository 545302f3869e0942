// Drive the Dagster UI in Debian's headless chromium (playwright-core, no browser download).
//
//   node scripts/browser/ui_check.mjs --url http://127.0.0.1:PORT --out DIR \
//        --graph-asset derived_memory --materialize group_catalog --expect a,b,c
//
// 1. opens the asset lineage graph around --graph-asset, waits for every --expect name,
//    screenshots it (DIR/asset-graph.png);
// 2. opens --materialize's asset page, clicks "Materialize", waits (bounded) until the
//    asset has a materialisation, screenshots the page (DIR/materialized.png);
// 3. with --partitions-asset A --expect-partitions p,q: opens A's Partitions tab, waits for
//    every partition key, screenshots it (DIR/partitions.png).
// Prints one JSON line: {graph_names_found, graph_text, run_id, materialized, ...}.
// Every wait is bounded; exit code 0 = all steps done, 1 = a step failed (JSON says which).
import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const url = arg('url');
const out = arg('out', '.');
const graphAsset = arg('graph-asset', 'derived_memory');
const materialize = arg('materialize', 'group_catalog');
const expect = (arg('expect', '') || '').split(',').filter(Boolean);
const timeoutMs = Number(arg('timeout-ms', '90000'));
const partitionsAsset = arg('partitions-asset', '');
const expectPartitions = (arg('expect-partitions', '') || '').split(',').filter(Boolean);
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
mkdirSync(out, { recursive: true });

const report = { url, graph_asset: graphAsset, materialize, expect, graph_names_found: [], steps: [] };
// a fresh, empty profile folder each time (playwright passes it as --user-data-dir)
const browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'sf-chromium-')), {
  executablePath,
  headless: true,
  viewport: { width: 1400, height: 900 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let ok = true;
try {
  const page = browser.pages()[0] || await browser.newPage();
  page.setDefaultTimeout(timeoutMs);

  async function dismissWelcome() {
    // a first visit shows a newsletter dialog; "Skip" closes it
    const skip = page.getByRole('button', { name: 'Skip' });
    try { await skip.waitFor({ timeout: 4000 }); await skip.click(); } catch { /* not shown */ }
  }

  // 1. the asset graph
  await page.goto(`${url}/assets/${graphAsset}?view=lineage&lineageScope=neighbors&lineageDepth=4`,
    { waitUntil: 'domcontentloaded' });
  await dismissWelcome();
  for (const name of expect) {
    try {
      await page.getByText(name, { exact: true }).first().waitFor({ timeout: timeoutMs / 3 });
      report.graph_names_found.push(name);
    } catch { /* reported as missing */ }
  }
  report.graph_text = (await page.innerText('body')).slice(0, 4000);
  await page.screenshot({ path: join(out, 'asset-graph.png') });
  report.steps.push('graph');
  if (report.graph_names_found.length !== expect.length) ok = false;

  // 2. materialise an asset from its page, wait for the materialisation
  await page.goto(`${url}/assets/${materialize}`, { waitUntil: 'domcontentloaded' });
  await dismissWelcome();
  const button = page.locator('button', { hasText: /^\s*Materialize/ }).first();
  await button.waitFor();
  await button.click();
  report.steps.push('clicked');
  const query = `query { assetOrError(assetKey: {path: ["${materialize}"]}) {
      ... on Asset { assetMaterializations(limit: 1) { runId timestamp } } } }`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const res = await page.evaluate(async (q) => {
      const r = await fetch('/graphql', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ query: q }) });
      return r.json();
    }, query);
    const mats = res?.data?.assetOrError?.assetMaterializations || [];
    if (mats.length) { report.run_id = mats[0].runId; break; }
    await page.waitForTimeout(1500);
  }
  report.materialized = Boolean(report.run_id);
  if (!report.materialized) ok = false;
  await page.goto(`${url}/assets/${materialize}`, { waitUntil: 'domcontentloaded' });
  await dismissWelcome();
  try { await page.getByText(/Latest materialization|Materialized/).first().waitFor({ timeout: 20000 }); } catch { /* screenshot anyway */ }
  report.asset_text = (await page.innerText('body')).slice(0, 4000);
  await page.screenshot({ path: join(out, 'materialized.png') });
  report.steps.push('materialized');

  // 3. the partitions an asset page lists (groups ingested by the CLI, the sensor ...)
  if (partitionsAsset) {
    report.partitions_found = [];
    await page.goto(`${url}/assets/${partitionsAsset}?view=partitions`, { waitUntil: 'domcontentloaded' });
    await dismissWelcome();
    for (const key of expectPartitions) {
      try {
        await page.getByText(key, { exact: true }).first().waitFor({ timeout: timeoutMs / 3 });
        report.partitions_found.push(key);
      } catch { /* reported as missing */ }
    }
    report.partitions_text = (await page.innerText('body')).slice(0, 4000);
    await page.screenshot({ path: join(out, 'partitions.png') });
    report.steps.push('partitions');
    if (report.partitions_found.length !== expectPartitions.length) ok = false;
  }
} catch (err) {
  ok = false;
  report.error = String(err).slice(0, 1000);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
process.exit(ok ? 0 : 1);
