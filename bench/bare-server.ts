import Fastify from 'fastify'
import { main } from './child.js'

// The baseline: the smallest Fastify app that answers like the health route.
main(async () => {
  const app = Fastify({ logger: false })
  app.get('/', async () => ({ status: 'ok' }))
  return app
})
