import { readFileSync } from 'node:fs'
import { textTable } from './report.js'

// Two `--json` results of `npm run bench`, e.g. of two commits run one after the other: each scenario
// of the first, side by side with the second. Scenarios are compared by their ratio to bare in
// their own run, which the machine's drift between the two runs moves less than their req/s.

const USAGE = 'usage: node build/bench/compare.js BEFORE.json AFTER.json [--floor 0.95]'

interface Result { date: string, rows: Array<{ name: string, reqPerSec: number, p99: number, ratio: number, rssMB: number }> }

function read (file: string): Result {
  const data = JSON.parse(readFileSync(file, 'utf8')) as Partial<Result>
  if (!Array.isArray(data.rows)) throw new Error(`${file} is not a bench result (no rows): write one with npm run bench -- --json`)
  return data as Result
}

const args = process.argv.slice(2)
const floorAt = args.indexOf('--floor')
const floor = floorAt === -1 ? 0.95 : Number(args.splice(floorAt, 2)[1])
if (args.length !== 2 || !(floor > 0)) {
  console.error(USAGE)
  process.exit(2)
}
const [before, after] = args.map(read) as [Result, Result]
const afterRows = new Map(after.rows.map((row) => [row.name, row]))
let regressions = 0
const lines = before.rows.filter((row) => row.name !== 'bare').map((old) => {
  const now = afterRows.get(old.name)
  if (!now) return [old.name, old.reqPerSec.toFixed(0), old.ratio.toFixed(2), '-', '-', 'missing', '']
  const change = now.ratio / old.ratio
  const low = change < floor
  if (low) regressions++
  return [old.name, old.reqPerSec.toFixed(0), old.ratio.toFixed(2), now.reqPerSec.toFixed(0), now.ratio.toFixed(2), change.toFixed(2), low ? `below ${floor}` : '']
})
console.log(`before: ${before.date}\nafter:  ${after.date}\n`)
console.log(textTable(['scenario', 'before req/s', 'before × bare', 'after req/s', 'after × bare', 'after ÷ before', ''], lines))
console.log(`\n${regressions} scenario(s) below ${floor} × their figure before`)
process.exitCode = regressions ? 1 : 0
