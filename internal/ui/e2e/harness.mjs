// What the browser scripts here share: settings from the environment
// (set by their go test), named steps, and the report of a run. A failed
// step leaves a screenshot and the text of every page it watched.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export function env(k) {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set (run through go test ./internal/ui)`);
  return v;
}

export function assert(cond, msg) {
  if (!cond) throw new Error('assertion failed: ' + msg);
}

export class Run {
  constructor(shots) {
    this.t0 = Date.now();
    this.shots = shots;
    this.problems = [];
    this.pages = []; // [who, page]
    this.stepName = '';
    mkdirSync(shots, { recursive: true });
  }

  async step(name, fn) {
    this.stepName = name;
    const s = Date.now();
    await fn();
    console.log(`ok   ${name} (${Date.now() - s} ms)`);
  }

  // failed records the step that threw e, with what each page showed.
  async failed(e) {
    this.problems.push(`step "${this.stepName}" failed: ${e.message}`);
    for (const [who, page] of this.pages) {
      await page.screenshot({ path: join(this.shots, `failed-${who}.png`) }).catch(() => {});
      const text = await page.evaluate(() => document.body.innerText).catch((err) => String(err));
      this.problems.push(`${who} page at ${page.url()} showed:\n${text.slice(0, 2000)}`);
    }
  }

  // exit ends the process: 1 with the problems, 0 when there were none.
  exit() {
    if (this.problems.length) {
      for (const p of this.problems) console.error('FAIL ' + p);
      process.exit(1);
    }
    console.log(`all steps passed in ${Date.now() - this.t0} ms`);
    process.exit(0);
  }
}
