import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { Registry } from 'prom-client'
import { describe, expect, test } from 'tstyche'
import {
  accountsPlugin, authPlugin, catalogPlugin, corsPlugin, dbPlugin, docsPlugin, errorsPlugin, etagsPlugin, healthPlugin,
  metricsPlugin, overloadPlugin, resourcePlugin, securityPlugin, wellKnownPlugin,
  type AccountsOptions, type AuthOptions, type CatalogOptions, type CorsOptions, type DbOptions, type DocsOptions,
  type EtagsOptions, type MetricsOptions, type OverloadOptions, type ResourceOptions, type WellKnownOptions
} from 'plinth'
import type { DatabaseClient } from 'plinth/db'

// Each plugin registers on a host's own Fastify instance with its options checked: a wrong option
// type is a compile error in the host, not a boot failure.
const app = Fastify()
const register = app.register

describe('infrastructure plugins', () => {
  test('errorsPlugin and securityPlugin take no options', () => {
    expect(register).type.toBeCallableWith(errorsPlugin)
    expect(register).type.toBeCallableWith(securityPlugin)
  })

  test('dbPlugin takes a url or an open client', () => {
    expect(register).type.toBeCallableWith(dbPlugin, { url: 'memory://' })
    expect(register).type.toBeCallableWith(dbPlugin, { url: 'postgres://db/app', migrate: false })
    expect(register).type.toBeCallableWith(dbPlugin, { client: {} as DatabaseClient })
    expect(register).type.not.toBeCallableWith(dbPlugin, { url: 5432 })
    expect(register).type.not.toBeCallableWith(dbPlugin, { url: 'memory://', migrate: 'yes' })
    expect(register).type.not.toBeCallableWith(dbPlugin, {})
    expect<DbOptions>().type.toBeAssignableFrom({ url: 'memory://' })
  })

  test('corsPlugin takes a list of origins', () => {
    expect(register).type.toBeCallableWith(corsPlugin, { origins: ['https://app.example.com'] })
    expect(register).type.not.toBeCallableWith(corsPlugin, { origins: 'https://app.example.com' })
    expect<CorsOptions['origins']>().type.toBe<string[] | undefined>()
  })

  test('docsPlugin takes the document\'s info and servers', () => {
    expect(register).type.toBeCallableWith(docsPlugin)
    expect(register).type.toBeCallableWith(docsPlugin, { title: 'Example', version: '1.2.0', servers: [{ url: 'https://api.example.com' }] })
    expect(register).type.not.toBeCallableWith(docsPlugin, { title: 1 })
    expect(register).type.not.toBeCallableWith(docsPlugin, { servers: ['https://api.example.com'] })
    expect<DocsOptions>().type.toBeAssignableFrom({})
  })

  test('authPlugin takes its algorithm, keys and lifetimes', () => {
    expect(register).type.toBeCallableWith(authPlugin, { secret: 'x'.repeat(32), accessTokenMinutes: 15 })
    expect(register).type.toBeCallableWith(authPlugin, { algorithm: 'EdDSA', privateKey: '-----BEGIN PRIVATE KEY-----' })
    expect(register).type.not.toBeCallableWith(authPlugin, { algorithm: 'RS256' })
    expect(register).type.not.toBeCallableWith(authPlugin, { accessTokenMinutes: '15' })
    expect<AuthOptions>().type.toBeAssignableFrom({})
  })

  test('etagsPlugin takes a secret', () => {
    expect(register).type.toBeCallableWith(etagsPlugin, { secret: 'x'.repeat(32) })
    expect(register).type.not.toBeCallableWith(etagsPlugin, { secret: 32 })
    expect<EtagsOptions>().type.toBeAssignableFrom({})
  })

  test('wellKnownPlugin takes the accounts prefix, public URL and scopes', () => {
    expect(register).type.toBeCallableWith(wellKnownPlugin, { accountsPrefix: '/api/v1', scopes: ['me'] })
    expect(register).type.not.toBeCallableWith(wellKnownPlugin, { scopes: 'me' })
    expect<WellKnownOptions>().type.toBeAssignableFrom({})
  })

  test('healthPlugin takes a prefix', () => {
    expect(register).type.toBeCallableWith(healthPlugin, { prefix: '/api/v1' })
    expect(register).type.not.toBeCallableWith(healthPlugin, { prefix: 1 })
  })

  test('metricsPlugin takes a prom-client registry', () => {
    expect(register).type.toBeCallableWith(metricsPlugin, { registry: new Registry(), processMetrics: false })
    expect(register).type.not.toBeCallableWith(metricsPlugin, { registry: {} })
    expect<MetricsOptions>().type.toBeAssignableFrom({})
  })

  test('overloadPlugin takes its bounds', () => {
    expect(register).type.toBeCallableWith(overloadPlugin, { maxInFlight: 300, behindProxy: true })
    expect(register).type.not.toBeCallableWith(overloadPlugin, { maxInFlight: '300' })
    expect<OverloadOptions>().type.toBeAssignableFrom({})
  })
})

describe('profile plugins', () => {
  test('accountsPlugin takes its settings, nested ones included', () => {
    expect(register).type.toBeCallableWith(accountsPlugin, {
      prefix: '/api/v1',
      passwordMinLength: 12,
      rateLimits: { register: 5 },
      mail: { from: 'Example <no-reply@example.com>' },
      sendMail: async () => {}
    })
    expect(register).type.not.toBeCallableWith(accountsPlugin, { passwordMinLength: '12' })
    expect(register).type.not.toBeCallableWith(accountsPlugin, { rateLimits: { register: true } })
    expect<AccountsOptions>().type.toBeAssignableFrom({})
  })

  test('catalogPlugin takes its page sizes and guards', () => {
    expect(register).type.toBeCallableWith(catalogPlugin, { prefix: '/api/v1', defaultLimit: 10, guards: { write: app.requireScopes('items:write') } })
    expect(register).type.not.toBeCallableWith(catalogPlugin, { defaultLimit: '10' })
    expect(register).type.not.toBeCallableWith(catalogPlugin, { guard: 'authenticated' })
    expect<CatalogOptions>().type.toBeAssignableFrom({})
  })

  test('resourcePlugin needs a name, and takes fields as TypeBox', () => {
    const fields = Type.Object({ title: Type.String() })
    expect(register).type.toBeCallableWith(resourcePlugin, { prefix: '/api/v1', name: 'notes', guard: app.authenticate })
    expect(register).type.toBeCallableWith(resourcePlugin, { name: 'tasks', fields, owner: true, indexes: ['title'], routes: { delete: false } })
    expect(register).type.not.toBeCallableWith(resourcePlugin, { prefix: '/api/v1' })
    expect(register).type.not.toBeCallableWith(resourcePlugin, { name: 'notes', guard: 'open' })
    expect(register).type.not.toBeCallableWith(resourcePlugin, { name: 'notes', owner: 'yes' })
    expect<ResourceOptions['name']>().type.toBe<string>()
  })
})
