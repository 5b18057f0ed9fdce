import type { Static } from '@sinclair/typebox'
import { describe, expect, test } from 'tstyche'
import * as plinth from 'plinth'
import * as db from 'plinth/db'
import * as schemas from 'plinth/schemas'
import * as telemetry from 'plinth/telemetry'

// These files import plinth by name, as a host does: TypeScript reads the declarations in dist/
// through package.json "exports", so `npm run test:types` builds first.

describe('plinth', () => {
  test('holds the plugins, the problem helpers and the repositories', () => {
    expect<'buildApp' | 'dbPlugin' | 'authPlugin' | 'resourcePlugin' | 'resourceTable' | 'validationError' | 'createRepository'>()
      .type.toBeAssignableTo<keyof typeof plinth>()
  })

  test('leaves the DDL, the driver and the schemas to their subpaths', () => {
    type Elsewhere = 'createTables' | 'ensureResourceTable' | 'resourceTableDdl' | 'BUILT_IN_TABLES' | 'tables' | 'connect' | 'rowsOf' |
      'ItemSchema' | 'problemResponses' | 'startTracing'
    expect<Extract<keyof typeof plinth, Elsewhere>>().type.toBe<never>()
  })

  test('keeps the internal helpers private', () => {
    type Internal = 'definedOnly' | 'containsPattern' | 'sqlState' | 'serverBusy' | 'serverBusyIn' | 'validatorCompiler' | 'apiSecurityHeaders'
    expect<Extract<keyof typeof plinth, Internal>>().type.toBe<never>()
  })
})

describe('plinth/db', () => {
  test('holds the driver client, the tables, raw rows and the DDL helpers', () => {
    expect(db.connect('memory://')).type.toBe<Promise<db.DatabaseClient>>()
    expect(db.rowsOf<{ n: number }>([])).type.toBe<Array<{ n: number }>>()
    expect(db.tables).type.toHaveProperty('users')
    expect(db.tables).type.toHaveProperty('items')
    expect(db.createTables).type.toBeCallableWith({} as db.DatabaseClient, ['records'])
  })

  test('its client is the one dbPlugin and buildApp take', () => {
    expect<db.DatabaseClient>().type.toBe<plinth.DatabaseClient>()
    expect<plinth.DbOptions>().type.toBeAssignableFrom({ client: {} as db.DatabaseClient })
    expect<plinth.DbOptions>().type.toBeAssignableFrom({ url: 'postgres://db/app', statementTimeoutMs: 5000 })
    expect(db.connect).type.toBeCallableWith('postgres://db/app', { statementTimeoutMs: 5000 })
    expect<db.DatabaseClient['statementTimeoutMs']>().type.toBe<number | undefined>()
  })
})

describe('plinth/schemas', () => {
  test('holds the TypeBox schemas of the contract, with their static types', () => {
    expect<Static<typeof schemas.ItemCreateSchema>>().type.toBe<schemas.ItemCreate>()
    expect<Static<typeof schemas.UserSchema>>().type.toBe<schemas.User>()
    expect(schemas.problemResponses(409, 422)).type.not.toRaiseError()
  })
})

describe('plinth/telemetry', () => {
  test('startTracing resolves to the function that stops it', () => {
    expect(telemetry.startTracing()).type.toBe<Promise<() => Promise<void>>>()
    expect(telemetry.enableQueryTracing).type.toBeCallableWith()
  })
})
