import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { startServer } from './support/server-process.js'

// The README's curl walk-through is run as written, against a real server, so it cannot go stale.

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const block = /<!-- walkthrough:start -->\s*```sh\n([\s\S]*?)```\s*<!-- walkthrough:end -->/.exec(readme)?.[1]
const expected = (block ?? '').split('\n').filter((line) => line.startsWith('#> ')).map((line) => line.slice(3))

/** The walk-through in bash, as a reader pastes it, against `base`; resolves what it printed. */
async function walk (base: string, script = block!) {
  const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], {
    env: { ...process.env, BASE: `${base}/api/v1` },
    timeout: 60_000
  })
  return stdout.trim().split('\n')
}

t.test('the curl walk-through prints what the README says it prints, and again on a second run', async (t) => {
  t.ok(block, 'README.md has the walk-through block')
  t.ok(expected.length >= 5, 'with its expected outputs')

  const server = startServer(t, { DATABASE_URL: 'memory://' })
  const base = await server.listening
  t.same(await walk(base), expected, 'each #> line, in order')
  // The same data, as `npm start` keeps it in ./data/pglite between two readers' tries.
  t.same(await walk(base).catch((error: Error) => error.message), expected, 'the second run on the same data prints the same')
  server.child.kill('SIGTERM')
  await server.exited
})

t.test('the walk-through\'s field helper answers a body that is not JSON with one line, not a stack', async (t) => {
  const helper = block!.split('\n').find((line) => line.startsWith('field() '))
  t.ok(helper, 'the block defines field')
  const run = promisify(execFile)('bash', ['-c', `${helper}\nprintf 'Bad Gateway' | field email`])
  const error = await run.then(() => undefined, (error: { code: number, stdout: string, stderr: string }) => error)
  t.ok(error, 'it fails')
  t.equal(error?.code, 1)
  t.equal(error?.stdout, '')
  t.equal(error?.stderr, 'not JSON: Bad Gateway\n', 'says what it got, on one line')
})

t.test('npm run test:quick runs a part of the suite, and the README says how long it and npm test take', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  const quick = String(pkg.scripts['test:quick'] ?? '')
  const files = quick.split(' ').filter((arg) => arg.endsWith('.test.ts'))
  t.ok(files.length >= 10, 'a dozen files or more')
  for (const file of files) t.ok(existsSync(new URL(`../${file}`, import.meta.url)), file)
  t.match(quick, /^tap --disable-coverage /, 'without the coverage floor, which a part of the suite cannot reach')
  for (const feature of ['embed', 'search', 'events', 'hooks', 'bulk']) {
    t.ok(files.includes(`test/routes/resources/${feature}.test.ts`), `the quick part covers the resources' ${feature}`)
  }
  t.match(readme, new RegExp(`npm run test:quick +# .*\\b${files.length} files\\b`), 'the README counts its files')
  t.match(readme, /^npm ci && npm test +# .*\b\d+ min/m, 'the opening says how long the suite takes')
  t.match(readme, /npm run test:quick +# .*\b\d+ min/, 'and how long the quick part takes')
})

t.test('the first npm start says on stderr that it is building dist/, and a start with dist/ says nothing', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  for (const script of ['prestart', 'pretest']) {
    const text = String(pkg.scripts[script])
    const check = text.slice(0, text.lastIndexOf(' || '))
    t.equal(text.slice(check.length), ' || npm run build', `${script} builds when its check fails`)
    const dir = await mkdtemp('/tmp/plinth-readme-test-')
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const run = () => promisify(execFile)('sh', ['-c', check], { cwd: dir }).then(() => ({ code: 0, stderr: '' }), (error: { code: number, stderr: string }) => error)
    const before = await run()
    t.equal(before.code, 1, `${script}: no dist/, so the build runs`)
    t.match(before.stderr, /^plinth: no dist\/ yet: building it with npm run build \(under a minute\)\.\.\.\n$/, `${script}: one line saying so`)
    await mkdir(join(dir, 'dist'))
    await writeFile(join(dir, 'dist', 'server.js'), '')
    t.same(await run(), { code: 0, stderr: '' }, `${script}: with dist/, silent and no build`)
  }
})

t.test('the install sections say how to install plinth from a tarball or from git, not from a registry it is not on', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  const plugins = readFileSync(new URL('../docs/plugins.md', import.meta.url), 'utf8')
  for (const [name, text] of [['README.md', readme], ['docs/plugins.md', plugins]] as const) {
    const section = text.slice(text.search(/^#+ Install$/m)).split(/\n#{2,4} (?!Install)/)[0]!
    t.ok(section.length > 100, `${name} has an Install section`)
    t.notMatch(section, /npm install plinth\b/, `${name}: no install from the registry`)
    t.match(section, /npm pack/, `${name}: the tarball is made with npm pack`)
    t.match(section, new RegExp(`npm install \\S*plinth-${pkg.version.replaceAll('.', '\\.')}\\.tgz`), `${name}: and installed by its name`)
    t.match(section, `npm install ${pkg.repository.url}#`, `${name}: or from the repository's git URL, at a commit`)
    t.match(section, /prepack/, `${name}: saying that the prepack build runs`)
  }
  t.ok(Buffer.byteLength(readme) <= 15_000, `README.md stays under 15 kB (${Buffer.byteLength(readme)} bytes)`)
})
