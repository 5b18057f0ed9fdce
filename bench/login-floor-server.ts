import formbody from '@fastify/formbody'
import Fastify from 'fastify'
import { hashPassword, verifyPassword } from '../plugins/auth/passwords.js'
import { main } from './child.js'
import { PASSWORD } from './scenarios-auth.js'

// The floor under the login scenario: what any Fastify login costs on this CPU. The form body
// (parsed by @fastify/formbody, as the app's), one argon2id verify through the app's own slot
// (plugins/auth/passwords.ts), a small JSON answer; no database, no failure count, no tokens.
// The bench reports the login against it.
main(async () => {
  const app = Fastify({ logger: false })
  const hashed = await hashPassword(PASSWORD)
  await app.register(formbody)
  app.post('/api/v1/auth/login', async (request, reply) => {
    const { password } = request.body as { password?: string }
    if (!await verifyPassword(hashed, String(password))) return await reply.code(401).send({ detail: 'wrong password' })
    return { access_token: 'floor', token_type: 'bearer' }
  })
  return app
})
