import { existsSync, readFileSync } from 'node:fs'
import t from 'tap'
import * as source from '../index.js'

// What a user installs is dist/, reached through package.json "exports"; `npm ci` builds it.
const root = new URL('../', import.meta.url)
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))

t.test('the package name resolves to the built entry point, with the same exports as index.ts', async (t) => {
  t.equal(pkg.exports['.'].default, './dist/index.js')
  t.equal(pkg.exports['.'].types, './dist/index.d.ts')
  t.ok(existsSync(new URL('dist/index.d.ts', root)), 'type declarations are built (npm run build)')
  // By name, as a user imports it (Node resolves a package's own name through its exports).
  const built = await import(pkg.name) as Record<string, unknown>
  t.same(Object.keys(built).sort(), Object.keys(source).sort(), 'dist is current: run npm run build after changing the source')
  for (const name of ['buildApp', 'dbPlugin', 'authPlugin', 'accountsPlugin', 'catalogPlugin', 'resourcePlugin', 'healthPlugin', 'docsPlugin', 'errorsPlugin']) {
    t.type(built[name], 'function', name)
  }
})

t.test('the declarations type every profile plugin, its options and the schemas\' static types', async (t) => {
  const declarations = (path: string) => readFileSync(new URL(`dist/${path}`, root), 'utf8')
  const index = declarations('index.d.ts')
  for (const name of ['resourcePlugin', 'ResourceOptions', 'accountsPlugin', 'AccountsOptions', 'catalogPlugin', 'CatalogOptions', 'Config']) {
    t.match(index, new RegExp(`\\b${name}\\b`), name)
  }
  for (const [module, name] of [['record', 'RecordCreate'], ['item', 'ItemCreate'], ['user', 'UserPublic']] as const) {
    t.match(index, `export * from './schemas/${module}.js'`)
    t.match(declarations(`schemas/${module}.d.ts`), new RegExp(`export type ${name} =`), name)
  }
})

t.test('plinth/client resolves to the generated OpenAPI types', async (t) => {
  t.same(pkg.exports['./client'], { types: './dist/client/schema.d.ts', default: './dist/client/schema.js' })
  t.match(readFileSync(new URL('dist/client/schema.d.ts', root), 'utf8'), /export interface paths \{/)
  await t.resolves(import(`${pkg.name}/client`), 'importable by name')
})
