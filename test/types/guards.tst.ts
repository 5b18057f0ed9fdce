import Fastify, { type onRequestHookHandler } from 'fastify'
import { describe, expect, test } from 'tstyche'
import type { App, Guard, PlinthAccount, PlinthGuards, TokenClaims } from 'plinth'

// A host adds the columns of its own to the account type, augmenting the module it imports from.
declare module 'plinth' {
  interface PlinthAccount {
    tenant: string
  }
}

const app = Fastify()

describe('the guard namespace', () => {
  test('app.plinthGuards holds the four guards', () => {
    expect(app.plinthGuards).type.toBe<PlinthGuards>()
    expect(app.plinthGuards.authenticate).type.toBe<Guard>()
    expect(app.plinthGuards.requireSuperuser).type.toBe<Guard>()
    expect(app.plinthGuards.requireVerified).type.toBe<Guard>()
  })

  test('requireScopes takes scope names and returns a guard', () => {
    expect(app.plinthGuards.requireScopes('notes:write', 'me')).type.toBe<Guard>()
    expect(app.plinthGuards.requireScopes()).type.toBe<Guard>()
    expect(app.plinthGuards.requireScopes).type.not.toBeCallableWith(['notes:write'])
    expect(app.plinthGuards.requireScopes).type.not.toBeCallableWith(1)
  })

  test('the short names are the same guards', () => {
    expect(app.authenticate).type.toBe<Guard>()
    expect(app.requireSuperuser).type.toBe<Guard>()
    expect(app.requireVerified).type.toBe<Guard>()
    expect(app.requireScopes('me')).type.toBe<Guard>()
  })

  test('a guard is an onRequest hook of a host\'s route', () => {
    expect(app.plinthGuards.authenticate).type.toBeAssignableTo<onRequestHookHandler>()
    expect(app.get).type.toBeCallableWith('/reports', { onRequest: app.plinthGuards.requireScopes('me') }, async () => 'ok')
    expect(app.get).type.toBeCallableWith('/reports', { onRequest: [app.authenticate, app.requireVerified] }, async () => 'ok')
  })

  test('a guard is typed for plinth\'s own instance too', () => {
    expect<App['plinthGuards']>().type.toBe<PlinthGuards>()
  })
})

describe('request.account', () => {
  test('is the PlinthAccount, with plinth\'s columns', () => {
    app.get('/me', async (request) => {
      expect(request.account).type.toBe<PlinthAccount>()
      expect(request.account.email).type.toBe<string>()
      expect(request.account.is_superuser).type.toBe<boolean>()
      expect(request.account.version).type.toBe<string>()
      expect(request.tokenClaims).type.toBe<TokenClaims | null>()
    })
  })

  test('a host\'s `declare module \'plinth\'` adds its own', () => {
    app.get('/tenant', async (request) => {
      expect(request.account.tenant).type.toBe<string>()
    })
    expect<PlinthAccount>().type.toHaveProperty('tenant')
  })
})
