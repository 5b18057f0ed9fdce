import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { ServerBusyError } from '../../concurrency/busy.js'
import { configProblems } from '../../settings/error.js'
import { dbProblems } from '../../db/errors.js'
import { httpProblems } from '../../http/errors.js'
import type { ProblemClass } from '../../http/problem-error.js'
import { authProblems } from '../../plugins/auth/errors.js'
import { changesProblems } from '../../plugins/changes.js'
import { corsProblems } from '../../plugins/cors.js'
import { dbPluginProblems } from '../../plugins/db.js'
import { docsProblems } from '../../plugins/docs.js'
import { etagsProblems } from '../../plugins/etags.js'
import { healthProblems } from '../../plugins/health.js'
import { metricsProblems } from '../../plugins/metrics.js'
import { overloadProblems } from '../../plugins/overload.js'
import { wellKnownProblems } from '../../plugins/well-known.js'
import { accountProblems } from '../../routes/accounts/errors.js'
import { catalogProblems } from '../../routes/catalog/errors.js'
import { resourceProblems } from '../../routes/resources/errors.js'
import { schemaProblems } from '../../schemas/errors.js'
import { build } from '../support/app.js'

// The prefix rule of docs/api.md ("Error codes"): a code answered over HTTP starts with its module's prefix, and a
// code of the shared HTTP layer has none (it names the HTTP condition); a code of the boot, never answered, starts
// with its plugin's name (`CORS_INVALID_OPTIONS`), or PLINTH_ for the server as a whole.
const SHARED = 'shared'
const MODULE_PREFIXES = ['AUTH_', 'ACCOUNT_', 'CATALOG_', 'RESOURCE_', 'PLINTH_']

interface Registry { problems: Record<string, ProblemClass>, wire: string[] | typeof SHARED, boot: string[] }

const REGISTRIES: Record<string, Registry> = {
  'http/errors.ts': { problems: httpProblems, wire: SHARED, boot: ['PLINTH_'] },
  'settings/error.ts': { problems: configProblems, wire: SHARED, boot: ['PLINTH_'] },
  'concurrency/busy.ts': { problems: { ServerBusyError }, wire: SHARED, boot: [] },
  // db/ and schemas/ cannot import routes/: the resource tables', lists' and fields' codes are declared there.
  'db/errors.ts': { problems: dbProblems, wire: ['RESOURCE_'], boot: ['RESOURCE_', 'PLINTH_'] },
  'schemas/errors.ts': { problems: schemaProblems, wire: ['RESOURCE_'], boot: ['RESOURCE_'] },
  'plugins/auth/errors.ts': { problems: authProblems, wire: ['AUTH_'], boot: ['AUTH_'] },
  'plugins/changes.ts': { problems: changesProblems, wire: SHARED, boot: ['CHANGES_'] },
  'plugins/cors.ts': { problems: corsProblems, wire: SHARED, boot: ['CORS_'] },
  'plugins/db.ts': { problems: dbPluginProblems, wire: SHARED, boot: ['DB_'] },
  'plugins/docs.ts': { problems: docsProblems, wire: SHARED, boot: ['DOCS_'] },
  'plugins/etags.ts': { problems: etagsProblems, wire: SHARED, boot: ['ETAGS_'] },
  'plugins/health.ts': { problems: healthProblems, wire: SHARED, boot: [] },
  'plugins/metrics.ts': { problems: metricsProblems, wire: SHARED, boot: ['METRICS_'] },
  'plugins/overload.ts': { problems: overloadProblems, wire: SHARED, boot: ['OVERLOAD_'] },
  'plugins/well-known.ts': { problems: wellKnownProblems, wire: SHARED, boot: ['WELL_KNOWN_'] },
  'routes/accounts/errors.ts': { problems: accountProblems, wire: ['AUTH_', 'ACCOUNT_'], boot: ['ACCOUNTS_'] },
  'routes/catalog/errors.ts': { problems: catalogProblems, wire: ['CATALOG_'], boot: ['CATALOG_'] },
  'routes/resources/errors.ts': { problems: resourceProblems, wire: ['RESOURCE_'], boot: ['RESOURCE_'] }
}

/** Wire codes outside the rule, kept because clients match on them and docs/api.md lists them. */
const EXCEPTIONS: Record<string, string> = {
  TOO_MANY_PASSWORD_HASHES: 'accounts: the 429 of the shared password-hash queue, named before the rule',
  MAIL_RATE_LIMITED: 'accounts: the 429 of the mail caps, named before the rule',
  UNSUPPORTED_MEDIA_TYPE: 'accounts: a form on a JSON route is the same 415 the shared layer answers any other type with'
}

/** Files that make coded errors without being a registry: the helper itself, which declares the others. */
const NOT_REGISTRIES = new Set(['http/problem-error.ts'])

const root = fileURLToPath(new URL('../../', import.meta.url))
const PRODUCT = ['app.ts', 'server.ts', 'index.ts', 'config.ts', 'cli', 'concurrency', 'db', 'http', 'mail', 'plugins', 'routes', 'schemas', 'settings', 'telemetry']

function * sources (path: string): Generator<string> {
  if (statSync(path).isDirectory()) for (const name of readdirSync(path)) yield * sources(join(path, name))
  else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) yield path
}

const entries = Object.entries(REGISTRIES).flatMap(([file, registry]) =>
  Object.entries(registry.problems).map(([name, Problem]) => ({ file, registry, name, Problem })))

/** An instance, for the headers made from its arguments. */
const sample = (Problem: ProblemClass) => new (Problem as unknown as new (...args: string[]) => { headers?: Record<string, string> })(
  ...Array.from({ length: Problem.template.split('%s').length - 1 }, () => '7'))

t.test('every file that declares error codes is a registry walked here', async (t) => {
  const declaring = PRODUCT.flatMap((top) => [...sources(join(root, top))])
    .filter((path) => /\b(createError|defineProblems?)\(/.test(readFileSync(path, 'utf8')))
    .map((path) => relative(root, path))
  t.same(declaring.filter((file) => !NOT_REGISTRIES.has(file)).sort(), Object.keys(REGISTRIES).sort())
})

t.test('every code follows the prefix rule, or is a listed exception', async (t) => {
  for (const { file, registry, Problem: { code, status } } of entries) {
    t.match(code, /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/, `${code} is upper snake case`)
    if (code in EXCEPTIONS && file === 'routes/accounts/errors.ts') {
      t.pass(`${code}: ${EXCEPTIONS[code]}`)
      continue
    }
    if (status === undefined) {
      t.ok(registry.boot.some((prefix) => code.startsWith(prefix)), `${file}: boot code ${code} starts with ${registry.boot.join(' or ')}`)
    } else if (registry.wire === SHARED) {
      t.notOk(MODULE_PREFIXES.some((prefix) => code.startsWith(prefix)), `${file}: shared code ${code} has no module prefix`)
    } else {
      t.ok(registry.wire.some((prefix) => code.startsWith(prefix)), `${file}: ${code} starts with ${registry.wire.join(' or ')}`)
    }
  }
  const listed = new Set(entries.map(({ Problem }) => Problem.code))
  for (const code of Object.keys(EXCEPTIONS)) t.ok(listed.has(code), `the exception ${code} is still declared`)
})

t.test('a code declared twice has one status and one set of fixed headers', async (t) => {
  const byCode = new Map<string, ProblemClass>()
  for (const { Problem } of entries) {
    const first = byCode.get(Problem.code)
    if (first === undefined) byCode.set(Problem.code, Problem)
    else t.same([Problem.status, Problem.headers ?? first.headers], [first.status, first.headers], Problem.code)
  }
})

t.test('each error carries the headers that explain it: a challenge on 401, a wait on 429 and 503', async (t) => {
  for (const { name, Problem } of entries) {
    const headers = sample(Problem).headers ?? {}
    if (Problem.status === 401) t.ok(headers['www-authenticate'], `${name} (${Problem.code}) carries WWW-Authenticate`)
    if (Problem.status === 429 || Problem.status === 503) t.ok(headers['retry-after'], `${name} (${Problem.code}) carries Retry-After`)
  }
})

t.test('every example code of the OpenAPI document is declared, with the status the example shows', async (t) => {
  const app = await build(t, { RESOURCES: ['records', 'notes'], CATALOG_WRITE_SCOPE: 'items:write' })
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const declared = new Map(entries.map(({ Problem }) => [Problem.code, Problem.status]))
  let examples = 0
  for (const methods of Object.values(doc.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, { example?: { code?: string, status?: number } }> }> }>>)) {
    for (const { responses } of Object.values(methods)) {
      for (const [media, { example }] of Object.values(responses).flatMap(({ content = {} }) => Object.entries(content))) {
        if (example?.code === undefined) continue
        examples++
        t.ok(declared.has(example.code), `${example.code} is declared`)
        // A token endpoint answers its refusals as RFC 6749 errors, 400 or 401, whatever the code's own status.
        if (media === 'application/problem+json') t.equal(example.status, declared.get(example.code), `${example.code} is a ${example.status}`)
      }
    }
  }
  t.ok(examples > 100, `${examples} examples checked`)
})
