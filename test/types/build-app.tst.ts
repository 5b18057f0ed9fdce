import { describe, expect, test } from 'tstyche'
import { buildApp, loadConfig, resolveConfig, type App, type BuildOptions, type Config } from 'plinth'
import type { DatabaseClient } from 'plinth/db'

describe('buildApp', () => {
  test('takes the configuration as plain values, each optional', () => {
    expect(buildApp).type.toBeCallableWith()
    expect(buildApp).type.toBeCallableWith({ DATABASE_URL: 'memory://', RESOURCES: ['records', 'notes'], PORT: 8000 })
    expect<Parameters<typeof buildApp>[0]>().type.toBe<Partial<Config> | undefined>()
  })

  test('a setting of the wrong type or a misspelt one is a type error', () => {
    expect(buildApp).type.not.toBeCallableWith({ DATABASE_URL: 5432 })
    expect(buildApp).type.not.toBeCallableWith({ PORT: '8000' })
    expect(buildApp).type.not.toBeCallableWith({ RESOURCES: 'records' })
    expect(buildApp).type.not.toBeCallableWith({ DATABSE_URL: 'memory://' })
  })

  test('takes Fastify\'s options and an open database client', () => {
    expect(buildApp).type.toBeCallableWith({}, { logger: false, database: {} as DatabaseClient })
    expect(buildApp).type.not.toBeCallableWith({}, { database: 'memory://' })
    expect<BuildOptions['database']>().type.toBe<DatabaseClient | undefined>()
  })

  test('resolves to plinth\'s Fastify instance, with its configuration decorated', async () => {
    expect(buildApp()).type.toBe<Promise<App>>()
    const app = await buildApp()
    expect(app.plinthConfig).type.toBe<Config>()
  })
})

describe('the configuration', () => {
  test('resolveConfig and loadConfig give the whole Config', () => {
    expect(resolveConfig({ DATABASE_URL: 'memory://' })).type.toBe<Config>()
    expect(loadConfig(process.env)).type.toBe<Config>()
    expect<Config['DATABASE_URL']>().type.toBe<string>()
  })
})
