import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import t from 'tap'
import { build } from './support/app.js'

// The suite's contract check (test/support/contract.ts) must catch what it is there to catch.
const app = await build(t)
// Routes that break their own schema on purpose: typed as plain Fastify routes, which would refuse them.
const plain = app as unknown as FastifyInstance
const schema = { operationId: 'probeContract', response: { 200: Type.Object({ ok: Type.Boolean() }) } }
plain.get('/probe/status', { schema }, async (_request, reply: FastifyReply) => reply.code(201).send({ ok: true }))
plain.get('/probe/body', { schema }, async (_request, reply: FastifyReply) => reply.type('application/json').send('{"ok":"yes"}'))
plain.get('/probe/type', { schema }, async (_request, reply: FastifyReply) => reply.type('text/plain').send('ok'))
plain.get('/probe/fine', { schema }, async () => ({ ok: true }))

t.test('an answer the document does not describe rejects the inject', async (t) => {
  await t.rejects(app.inject({ method: 'GET', url: '/probe/status' }), /contract: GET \/probe\/status answered 201, which its document does not list \(200/)
  await t.rejects(app.inject({ method: 'GET', url: '/probe/body' }), /contract: GET \/probe\/body 200 does not match its documented schema: data\/ok must be boolean/)
  await t.rejects(app.inject({ method: 'GET', url: '/probe/type' }), /contract: GET \/probe\/type 200 is text\/plain; the document lists application\/json/)
  t.equal((await app.inject({ method: 'GET', url: '/probe/fine' })).statusCode, 200, 'a documented answer passes')
  t.equal((await app.inject({ method: 'GET', url: '/probe/fine?x=1' })).statusCode, 200, 'whatever the query')
})
