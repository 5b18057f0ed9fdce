import { Type } from '@sinclair/typebox'
import t from 'tap'
import { API_PREFIX } from '../../../app.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { build } from '../../support/app.js'
import { isEvent, listening, openStream } from '../../support/event-stream.js'

const ROWS = 1000

t.test('a subscriber that keeps up receives a bulk create of 1,000 rows (950 kB) whole, never cut', async (t) => {
  const app = await build(t)
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'docs', fields: Type.Object({ body: Type.String({ maxLength: 1000 }) }) })
  const base = await listening(app)
  const stream = await openStream(t, `${base}${API_PREFIX}/docs/events`)
  await stream.next((block) => block.id !== undefined)
  const body = 'x'.repeat(950)
  const res = await app.inject({ method: 'POST', url: `${API_PREFIX}/docs/`, payload: Array.from({ length: ROWS }, () => ({ body })) })
  t.equal(res.statusCode, 201)
  const last = res.json().at(-1).id
  const received = await stream.next((block) => isEvent(block) && JSON.parse(block.data!).id === last, 'the last row\'s event')
  t.ok(received, 'the last event arrived')
  t.equal(stream.blocks.filter(isEvent).length, ROWS, 'every event, once')
})
