import { Type } from '@sinclair/typebox'
import t from 'tap'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { API_PREFIX } from '../../../app.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { Reference } from '../../../schemas/fields.js'
import { newAccount, superuser } from '../../support/app.js'
import { buildResources } from '../../support/resources.js'

// The change feed is another part's: these tests are about references.
const NO_EVENTS = { events: false }
const Vault = Type.Object({ name: Type.String() })
const noteOf = (resource: string) => Type.Object({ title: Type.String(), ref_id: Type.Optional(Type.Union([Reference(resource), Type.Null()])) })

const app = await buildResources(t, [])
const superusersOnly = { read: app.plinthGuards.requireSuperuser, write: app.plinthGuards.requireSuperuser }
// A host's own guard, which answers its refusal itself, with a header of its own.
async function hostGuard (request: FastifyRequest, reply: FastifyReply) {
  if (request.headers['x-host-down'] === 'yes') throw Object.assign(new Error('the host\'s directory is down'), { statusCode: 503 })
  if (request.headers['x-host-pass'] !== 'yes') return reply.code(403).header('x-host-refused', 'yes').send({ message: 'no' })
}
for (const [name, guards] of [['vaults', superusersOnly], ['host_vaults', { read: hostGuard, write: superusersOnly.write }]] as const) {
  await app.register(resourcePlugin, { prefix: API_PREFIX, name, fields: Vault, guards, routes: NO_EVENTS })
}
for (const [name, target, guards] of [['notes', 'vaults', { write: app.plinthGuards.authenticate }], ['open_notes', 'vaults', {}], ['host_notes', 'host_vaults', {}]] as const) {
  await app.register(resourcePlugin, { prefix: API_PREFIX, name, fields: noteOf(target), guards, routes: NO_EVENTS })
}
const ada = await newAccount(app)
const root = await superuser(app, 'root-guarded-references@example.com')
const MISSING = 999_999

const send = (method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, headers: Record<string, string>, payload?: unknown) =>
  app.inject({ method, url: `${API_PREFIX}/${url}`, headers, ...(payload === undefined ? {} : { payload: payload as object }) })
const vault = (await send('POST', 'vaults/', root.session.headers, { name: 'v' })).json() as { id: number }
const hostVault = (await send('POST', 'host_vaults/', root.session.headers, { name: 'v' })).json() as { id: number }

t.test('attack: a user probes a superuser-only resource for ids by referencing them: the 422 is the one a missing row gets', async (t) => {
  const existing = await send('POST', 'notes/', ada.session.headers, { title: 'probe', ref_id: vault.id })
  const missing = await send('POST', 'notes/', ada.session.headers, { title: 'probe', ref_id: MISSING })
  t.equal(existing.statusCode, 422)
  t.equal(missing.statusCode, 422)
  t.same(existing.json(), missing.json(), 'the whole problem document')
  t.same(existing.headers['content-type'], missing.headers['content-type'])
  t.match(existing.json(), { code: 'VALIDATION_FAILED', errors: [{ path: '/body/ref_id', message: 'must match a row of vaults (foreign key constraint "notes_ref_id_fkey")' }] })
  t.same((await send('POST', 'notes/', ada.session.headers, { title: 'none' })).statusCode, 201, 'a note without a reference is fine')
})

t.test('attack: a user moves a note onto a superuser-only row by PATCH or PUT: the same 422 as a missing row', async (t) => {
  const note = (await send('POST', 'notes/', ada.session.headers, { title: 'mine' })).json() as { id: number }
  for (const method of ['PATCH', 'PUT'] as const) {
    const existing = await send(method, `notes/${note.id}`, ada.session.headers, { title: 'moved', ref_id: vault.id })
    const missing = await send(method, `notes/${note.id}`, ada.session.headers, { title: 'moved', ref_id: MISSING })
    t.equal(existing.statusCode, 422, method)
    t.same(existing.json(), missing.json(), method)
  }
})

t.test('attack: a bulk create tests many ids at once: each guarded row is named as a missing one is', async (t) => {
  const res = await send('POST', 'notes/', ada.session.headers, [{ title: 'a' }, { title: 'b', ref_id: vault.id }, { title: 'c', ref_id: MISSING }, { title: 'd', ref_id: null }])
  t.equal(res.statusCode, 422)
  const refusal = 'must match a row of vaults (foreign key constraint "notes_ref_id_fkey")'
  t.same(res.json().errors, [{ path: '/body/1/ref_id', message: refusal }, { path: '/body/2/ref_id', message: refusal }])
})

t.test('attack: a user blocks the deletion of a superuser-only row by referencing it with restrict', async (t) => {
  const target = (await send('POST', 'vaults/', root.session.headers, { name: 'to delete' })).json() as { id: number }
  t.equal((await send('POST', 'notes/', ada.session.headers, { title: 'anchor', ref_id: target.id })).statusCode, 422)
  t.equal((await send('POST', 'notes/', ada.session.headers, [{ title: 'anchor', ref_id: target.id }])).statusCode, 422)
  t.equal((await send('DELETE', `vaults/${target.id}`, root.session.headers)).statusCode, 204, 'nothing references it')
})

t.test('without a token, on a route open to anyone, a guarded row is a missing one too', async (t) => {
  const existing = await send('POST', 'open_notes/', {}, { title: 'probe', ref_id: vault.id })
  t.equal(existing.statusCode, 422)
  t.same(existing.json(), (await send('POST', 'open_notes/', {}, { title: 'probe', ref_id: MISSING })).json())
  t.equal((await send('POST', 'open_notes/', ada.session.headers, { title: 'probe', ref_id: vault.id })).statusCode, 422, 'nor with a user\'s token')
  t.equal((await send('POST', 'open_notes/', root.session.headers, { title: 'root', ref_id: vault.id })).statusCode, 201, 'a superuser\'s token passes the guard')
})

t.test('a superuser, who passes the target\'s read guard, references its rows, one at a time or in bulk', async (t) => {
  const one = await send('POST', 'notes/', root.session.headers, { title: 'root', ref_id: vault.id })
  t.equal(one.statusCode, 201)
  t.equal(one.json().ref_id, vault.id)
  const bulk = await send('POST', 'notes/', root.session.headers, [{ title: 'a', ref_id: vault.id }, { title: 'b' }])
  t.equal(bulk.statusCode, 201)
  t.equal((await send('PATCH', `notes/${one.json().id as number}`, root.session.headers, { ref_id: null })).statusCode, 200)
})

t.test('a host\'s own read guard: its refusal is a missing row, with nothing of its answer; its pass lets the reference through', async (t) => {
  const existing = await send('POST', 'host_notes/', {}, { title: 'probe', ref_id: hostVault.id })
  const missing = await send('POST', 'host_notes/', {}, { title: 'probe', ref_id: MISSING })
  t.equal(existing.statusCode, 422)
  t.same(existing.json(), missing.json())
  t.notOk('x-host-refused' in existing.headers, 'the guard\'s own header is undone')
  t.same(existing.json().errors, [{ path: '/body/ref_id', message: 'must match a row of host_vaults (foreign key constraint "host_notes_ref_id_fkey")' }])
  const passed = await send('POST', 'host_notes/', { 'x-host-pass': 'yes' }, { title: 'ok', ref_id: hostVault.id })
  t.equal(passed.statusCode, 201)
  t.equal((await send('POST', 'host_notes/', { 'x-host-pass': 'yes' }, { title: 'missing', ref_id: MISSING })).statusCode, 422, 'a missing row is still missing')
})

t.test('a guard that fails rather than refuses fails the write as it would fail its own route, never as a missing row', async (t) => {
  const res = await send('POST', 'host_notes/', { 'x-host-down': 'yes' }, { title: 'probe', ref_id: hostVault.id })
  const own = await app.inject({ method: 'GET', url: `${API_PREFIX}/host_vaults/${hostVault.id}`, headers: { 'x-host-down': 'yes' } })
  t.ok(res.statusCode >= 500, `not a 4xx (${res.statusCode})`)
  t.equal(res.statusCode, own.statusCode, 'as on its own route')
  t.equal(res.json().code, own.json().code)
})
