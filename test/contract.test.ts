import { Type } from '@sinclair/typebox'
import t from 'tap'
import { build } from './support/app.js'

// The suite's contract check (test/support/contract.ts) must catch what it is there to catch.
const app = await build(t)
const schema = { operationId: 'probeContract', response: { 200: Type.Object({ ok: Type.Boolean() }) } }
app.get('/probe/status', { schema }, async (_request, reply) => reply.code(201).send({ ok: true }))
app.get('/probe/body', { schema }, async (_request, reply) => reply.type('application/json').send('{"ok":"yes"}'))
app.get('/probe/type', { schema }, async (_request, reply) => reply.type('text/plain').send('ok'))
app.get('/probe/fine', { schema }, async () => ({ ok: true }))

t.test('an answer the document does not describe rejects the inject', async (t) => {
  await t.rejects(app.inject({ method: 'GET', url: '/probe/status' }), /contract: GET \/probe\/status answered 201, which its document does not list \(200/)
  await t.rejects(app.inject({ method: 'GET', url: '/probe/body' }), /contract: GET \/probe\/body 200 does not match its documented schema: data\/ok must be boolean/)
  await t.rejects(app.inject({ method: 'GET', url: '/probe/type' }), /contract: GET \/probe\/type 200 is text\/plain; the document lists application\/json/)
  t.equal((await app.inject({ method: 'GET', url: '/probe/fine' })).statusCode, 200, 'a documented answer passes')
  t.equal((await app.inject({ method: 'GET', url: '/probe/fine?x=1' })).statusCode, 200, 'whatever the query')
})
