import { Type } from '@sinclair/typebox'
import t from 'tap'
import { buildResources } from '../../support/resources.js'

const app = await buildResources(t, [
  { name: 'documents', fields: Type.Object({ title: Type.String(), data: Type.Optional(Type.Unsafe<object>({ type: 'object' })) }) }
])
const DOCUMENTS = '/api/v1/documents'

/** `{"a":{"a":...{}}}`, `depth` objects deep, as JSON text: building it as an object would not change what is sent. */
const nested = (depth: number) => `{"title":"deep","data":${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}}`

const statuses = (answers: Array<{ statusCode: number }>) => {
  const counts: Record<number, number> = {}
  for (const { statusCode } of answers) counts[statusCode] = (counts[statusCode] ?? 0) + 1
  return counts
}

t.test('one user\'s 10,000-deep object fails only its own create, never another user\'s 150 concurrent ones', async (t) => {
  const headers = { 'content-type': 'application/json' }
  const [attack, ...others] = await Promise.all([
    app.inject({ method: 'POST', url: `${DOCUMENTS}/`, headers, payload: nested(10_000) }),
    ...Array.from({ length: 150 }, (_, i) => app.inject({ method: 'POST', url: `${DOCUMENTS}/`, payload: { title: `b${i}`, data: { i } } }))
  ])
  t.same(statuses(others), { 201: 150 }, 'every one of the other user\'s creates is stored')
  t.equal(attack!.statusCode, 422)
  t.equal(attack!.json().errors[0].path, '/body/data')
})

t.test('one user\'s 10,000-deep object fails only its own PATCH, never other users\' concurrent ones', async (t) => {
  const made = await Promise.all(Array.from({ length: 50 }, (_, i) => app.inject({ method: 'POST', url: `${DOCUMENTS}/`, payload: { title: `p${i}` } })))
  const ids = made.map((res) => res.json().id as number)
  const [attack, ...others] = await Promise.all([
    app.inject({ method: 'PATCH', url: `${DOCUMENTS}/${ids[0]}`, headers: { 'content-type': 'application/json' }, payload: nested(10_000) }),
    ...ids.slice(1).map((id) => app.inject({ method: 'PATCH', url: `${DOCUMENTS}/${id}`, payload: { data: { id } } }))
  ])
  t.same(statuses(others), { 200: 49 }, 'every other PATCH is written')
  t.equal(attack!.statusCode, 422)
  t.equal(attack!.json().errors[0].path, '/body/data')
})
