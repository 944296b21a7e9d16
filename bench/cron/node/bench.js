// The cron-parser side of the cron next-run benchmark (bench/cron/run.sh).
//   node bench.js CASES STARTS OUT [BUDGET_MS]
// For each case: the expression is parsed once; each next run is reset(start) and
// next(). A pass stops after BUDGET_MS (default 1000), or when every start has been
// used; after one untimed warm-up pass (for the JIT), ns per next run is the best
// of 3 passes, as for every engine. The answers of the warm-up pass go to OUT/cron-parser.<i>.txt.
'use strict';
const fs = require('fs');
const { CronExpressionParser } = require('cron-parser');

const [casesPath, startsPath, out, budgetArg] = process.argv.slice(2);
const budget = Number(budgetArg || 1000) * 1e6;
// CPU time of the process in ns (user and system): on a shared machine the time
// spent waiting for a core is not the engine's cost; every engine is timed so.
const cpu = () => {
  const u = process.cpuUsage();
  return BigInt(u.user + u.system) * 1000n;
};
const starts = fs.readFileSync(startsPath, 'utf8').split('\n').filter(Boolean).map(Number);
const cases = fs.readFileSync(casesPath, 'utf8').split('\n').filter(Boolean);

cases.forEach((line, i) => {
  const [expr, tz] = line.split('\t');
  const e = CronExpressionParser.parse(expr, { currentDate: new Date(starts[0] * 1000), tz });
  const answers = [];
  const passes = [];
  for (let r = 0; r < 4; r++) {
    let n = 0;
    const t0 = cpu();
    let elapsed = 0n;
    while (n < starts.length && (n < 20 || elapsed < budget)) {
      e.reset(new Date(starts[n] * 1000));
      let next;
      try {
        next = e.next().getTime() / 1000;
      } catch (err) {
        next = 'error'; // cron-parser gives up ("loop limit exceeded") in some DST cases
      }
      if (r === 0) answers.push(next);
      n++;
      if ((n & 15) === 0) elapsed = cpu() - t0;
    }
    elapsed = cpu() - t0;
    if (r > 0) passes.push(Number(elapsed) / n);
  }
  passes.sort((a, b) => a - b);
  console.log(`${i}\t${passes[0].toFixed(1)}\t${answers.length}`);
  fs.writeFileSync(`${out}/cron-parser.${i}.txt`, answers.join('\n') + '\n');
});
