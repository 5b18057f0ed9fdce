import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import t from 'tap'
import { startServer } from './support/server-process.js'

// The README's curl walk-through is run as written, against a real server, so it cannot go stale.

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const block = /<!-- walkthrough:start -->\s*```sh\n([\s\S]*?)```\s*<!-- walkthrough:end -->/.exec(readme)?.[1]

t.test('the curl walk-through prints what the README says it prints', async (t) => {
  t.ok(block, 'README.md has the walk-through block')
  const expected = block!.split('\n').filter((line) => line.startsWith('#> ')).map((line) => line.slice(3))
  t.ok(expected.length >= 5, 'with its expected outputs')

  const server = startServer(t, { DATABASE_URL: 'memory://' })
  const base = await server.listening
  const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', block!], {
    env: { ...process.env, BASE: `${base}/api/v1` },
    timeout: 60_000
  })
  t.same(stdout.trim().split('\n'), expected, 'each #> line, in order')
  server.child.kill('SIGTERM')
  await server.exited
})
