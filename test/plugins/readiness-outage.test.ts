import { sql } from 'drizzle-orm'
import t from 'tap'
import { buildApp } from '../../app.js'
import { hasPostgresServer, privatePostgres } from '../support/postgres-server.js'

t.test('readiness follows a real PostgreSQL going down and coming back', {
  skip: hasPostgresServer() ? false : 'no PostgreSQL server binaries on this machine'
}, async (t) => {
  const pg = await privatePostgres(t)
  const app = await buildApp({ DATABASE_URL: pg.url }, { logger: false })
  t.teardown(() => app.close())
  app.get('/query', async () => app.plinthDb.db.execute(sql`select 1 as one`))

  const up = await app.inject({ method: 'GET', url: '/api/v1/health/ready' })
  t.equal(up.statusCode, 200, 'ready while PostgreSQL runs')

  await pg.stop()
  const started = Date.now()
  const down = await app.inject({ method: 'GET', url: '/api/v1/health/ready' })
  t.equal(down.statusCode, 503, 'not ready once PostgreSQL is stopped')
  t.equal(down.json().code, 'DATABASE_UNAVAILABLE')
  t.equal(down.json().detail, 'The database does not answer')
  t.ok(Date.now() - started < 5000, 'answers within the readiness bound, no hang')

  const query = await app.inject({ method: 'GET', url: '/query' })
  t.equal(query.statusCode, 503, 'any route that needs the database answers 503')
  t.equal(query.json().code, 'DATABASE_UNAVAILABLE')
  t.notMatch(query.payload, /ECONNREFUSED|select/, 'no driver text')

  const live = await app.inject({ method: 'GET', url: '/api/v1/health' })
  t.equal(live.statusCode, 200, 'liveness does not depend on the database')

  await pg.start()
  const back = await app.inject({ method: 'GET', url: '/api/v1/health/ready' })
  t.equal(back.statusCode, 200, 'ready again without a restart')
  t.equal((await app.inject({ method: 'GET', url: '/query' })).statusCode, 200, 'queries work again')
})
