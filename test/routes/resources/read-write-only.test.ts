import { Type } from '@sinclair/typebox'
import t, { type Test } from 'tap'
import { API_PREFIX } from '../../../app.js'
import { resolveResourceOptions } from '../../../routes/resources/options.js'
import { Reference } from '../../../schemas/fields.js'
import { buildResources } from '../../support/resources.js'
import { assertProblem } from '../../support/responses.js'

// A secret clients may set and never read back, and a code only the server sets.
const AccountFields = Type.Object({
  name: Type.String(),
  secret: Type.String({ writeOnly: true, minLength: 1 }),
  hint: Type.Optional(Type.Union([Type.String(), Type.Null()], { writeOnly: true })),
  code: Type.String({ readOnly: true, default: 'new' }),
  note: Type.Optional(Type.String({ readOnly: true }))
})

const app = await buildResources(t, [{ name: 'vaults', fields: AccountFields }])
const VAULTS = `${API_PREFIX}/vaults`
const SECRET = 'hunter2-correct-horse'

async function createVault (t: Test, payload: Record<string, unknown> = {}) {
  const res = await app.inject({ method: 'POST', url: `${VAULTS}/`, payload: { name: 'v', secret: SECRET, hint: 'a horse', ...payload } })
  t.equal(res.statusCode, 201, res.payload)
  return res
}

t.test('a writeOnly field never comes back: not from POST, GET, the list, PUT or PATCH', async (t) => {
  const created = await createVault(t)
  const url = `${VAULTS}/${created.json().id}`
  const answers = {
    POST: created,
    GET: await app.inject({ method: 'GET', url }),
    list: await app.inject({ method: 'GET', url: `${VAULTS}/` }),
    PATCH: await app.inject({ method: 'PATCH', url, payload: { secret: `${SECRET}!`, name: 'patched' } }),
    PUT: await app.inject({ method: 'PUT', url, payload: { name: 'replaced', secret: SECRET, hint: 'still a horse' } })
  }
  for (const [route, res] of Object.entries(answers)) {
    t.equal(res.statusCode, route === 'POST' ? 201 : 200, route)
    t.notOk(res.payload.includes(SECRET) || res.payload.includes('horse'), `${route} tells neither the secret nor the hint`)
    const rows = [res.json()].flat() as Array<Record<string, unknown>>
    t.ok(rows.length > 0 && rows.every((row) => !('secret' in row) && !('hint' in row)), `${route} has no writeOnly member`)
  }
  t.equal(answers.PUT.json().name, 'replaced', 'the write itself went through')
})

t.test('a writeOnly field neither filters nor sorts the list, nor filters the change feed, which would tell it', async (t) => {
  await createVault(t)
  for (const query of [`secret=${SECRET}`, 'secret[contains]=hunter', 'hint[is]=null', 'sort=secret', 'sort=-hint']) {
    assertProblem(t, await app.inject({ method: 'GET', url: `${VAULTS}/?${query}` }), 422, 'VALIDATION_FAILED', query)
  }
  for (const query of [`secret=${SECRET}`, 'secret[contains]=hunter', 'hint[is]=null']) {
    assertProblem(t, await app.inject({ method: 'GET', url: `${VAULTS}/events?${query}` }), 422, 'VALIDATION_FAILED', `events?${query}`)
  }
})

t.test('attack: a unique writeOnly field would confirm another row\'s secret by 409, a bulk of guesses at a time: refused at boot', async (t) => {
  for (const unique of [['secret'], [['name', 'secret']], [{ fields: ['secret'], global: true }]]) {
    const error = t.throws(() => resolveResourceOptions({ name: 'vaults', fields: AccountFields, unique })) as Error & { code?: string }
    t.equal(error.message, 'resource plugin: "vaults": unique names "secret", a writeOnly field; a conflict would tell another row\'s value', JSON.stringify(unique))
    t.equal(error.code, 'RESOURCE_INVALID_OPTIONS')
  }
  t.ok(resolveResourceOptions({ name: 'vaults', fields: AccountFields, unique: ['name'] }), 'a field clients read back may be unique')
})

t.test('attack: a writeOnly reference would show its row through ?embed= and list rows by it: refused at boot', async (t) => {
  const fields = Type.Object({ name: Type.String(), vault_id: Reference('vaults', { writeOnly: true }) })
  const error = t.throws(() => resolveResourceOptions({ name: 'keys', fields })) as Error & { code?: string }
  t.equal(error.message, 'resource plugin: "keys": field "vault_id": a reference is never writeOnly: ?embed= would show the row it references, and list the rows that reference a row')
  t.equal(error.code, 'RESOURCE_INVALID_OPTIONS')
  const nullable = Type.Object({ vault_id: Type.Union([Reference('vaults'), Type.Null()], { writeOnly: true }) })
  t.throws(() => resolveResourceOptions({ name: 'keys', fields: nullable }), { code: 'RESOURCE_INVALID_OPTIONS' }, 'nullable too')
})

t.test('a readOnly field is stripped from bodies: POST, PUT and PATCH leave it to the server', async (t) => {
  const created = await createVault(t, { code: 'forged', note: 'forged' })
  t.equal(created.json().code, 'new', 'POST: the default, not the body')
  t.notOk('note' in created.json(), 'POST: an optional readOnly field stays unset')
  const url = `${VAULTS}/${created.json().id}`
  t.match((await app.inject({ method: 'PATCH', url, payload: { code: 'forged', note: 'forged' } })).json(), { code: 'new' })
  const replaced = await app.inject({ method: 'PUT', url, payload: { name: 'w', secret: SECRET, code: 'forged', note: 'forged' } })
  t.equal(replaced.statusCode, 200)
  t.match(replaced.json(), { name: 'w', code: 'new' }, 'PUT replaces what a client may write, and keeps what the server set')
  t.notOk('note' in replaced.json())
})

t.test('the OpenAPI document says the same: no writeOnly field in the row, no readOnly field in a body', async (t) => {
  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const row = document.components.schemas.VaultsRecord
  t.same(Object.keys(row.properties), ['id', 'created_at', 'updated_at', 'name', 'code', 'note'])
  t.equal(row.properties.code.readOnly, true)
  const item = document.paths[`${VAULTS}/{vaults_id}`]
  for (const operation of [document.paths[VAULTS].post, item.put, item.patch]) {
    const schema = operation.requestBody.content['application/json'].schema
    // A create takes one body or an array of them.
    const body = schema.anyOf?.[0] ?? schema
    t.same(Object.keys(body.properties), ['name', 'secret', 'hint'], operation.operationId)
    t.equal(body.properties.secret.writeOnly, true, operation.operationId)
  }
  const filters = document.paths[VAULTS].get.parameters.map((parameter: { name: string }) => parameter.name)
  t.notOk(filters.some((name: string) => name.startsWith('secret') || name.startsWith('hint')), 'no filter on a writeOnly field')
  t.ok(filters.includes('code') && filters.includes('note[is]'), 'readOnly fields filter as others do')
})
