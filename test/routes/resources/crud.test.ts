import t from 'tap'
import { buildResources, createRecord, notFound } from '../../support/resources.js'
import { JSON_TYPE, PROBLEM_TYPE, validationProblem } from '../../support/responses.js'

const app = await buildResources(t, ['records', 'notes'])
const RECORDS = '/api/v1/records'
const NOTES = '/api/v1/notes'

const list = async (url: string) => (await app.inject({ method: 'GET', url })).json() as Array<{ id: number }>

t.test('ids are 1, 2, 3 in creation order, and a deleted id is never given out again', async (t) => {
  const created = []
  for (const title of ['first', 'second', 'third']) {
    const res = await app.inject({ method: 'POST', url: `${RECORDS}/`, payload: { title } })
    t.equal(res.statusCode, 201)
    t.equal(res.headers['content-type'], JSON_TYPE)
    created.push(res.json())
  }
  t.same(created, [
    { id: 1, title: 'first', description: null },
    { id: 2, title: 'second', description: null },
    { id: 3, title: 'third', description: null }
  ])
  t.equal((await app.inject({ method: 'DELETE', url: `${RECORDS}/3` })).statusCode, 204)
  t.equal((await app.inject({ method: 'DELETE', url: `${RECORDS}/2` })).statusCode, 204)
  t.equal((await createRecord(app, 'records', { title: 'fourth' })).id, 4, 'the last id is not refilled')
  t.same((await list(`${RECORDS}/`)).map((record) => record.id), [1, 4], 'the gap stays')
})

t.test('two resources side by side keep their own tables and id sequences', async (t) => {
  t.same(await list(`${NOTES}/`), [], 'notes does not see records')
  t.same(await createRecord(app, 'notes', { title: 'a note', description: 'in notes' }), { id: 1, title: 'a note', description: 'in notes' })
  t.equal((await createRecord(app, 'records', { title: 'fifth' })).id, 5)
  t.equal((await createRecord(app, 'notes', { title: 'another note' })).id, 2)
  t.same((await list(NOTES)).map((record) => record.id), [1, 2])
  t.equal((await app.inject({ method: 'GET', url: `${NOTES}/5` })).statusCode, 404, 'a records id is not a notes id')
})

t.test('POST stores title and description, and GET reads the record back', async (t) => {
  const created = await createRecord(app, 'records', { title: 'with text', description: 'some text' })
  t.same(Object.keys(created), ['id', 'title', 'description'], 'exactly the record fields, in order')
  const res = await app.inject({ method: 'GET', url: `${RECORDS}/${created.id}` })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], JSON_TYPE)
  t.same(res.json(), { id: created.id, title: 'with text', description: 'some text' })
  t.same((await createRecord(app, 'records', { title: 'nulled', description: null })).description, null, 'description may be null')
})

t.test('id and unknown fields are stripped on create, never stored', async (t) => {
  const created = await createRecord(app, 'records', { title: 'sneaky', id: 999999, owner: 'me' })
  t.not(created.id, 999999)
  t.same(Object.keys(created), ['id', 'title', 'description'])
  t.equal((await app.inject({ method: 'GET', url: `${RECORDS}/999999` })).statusCode, 404, 'no record under the sent id')
})

t.test('a missing record is 404 RESOURCE_NOT_FOUND naming the resource and id, on GET, PUT and DELETE', async (t) => {
  const gone = await createRecord(app, 'records', { title: 'ghost' })
  await app.inject({ method: 'DELETE', url: `${RECORDS}/${gone.id}` })
  for (const [name, id] of [['records', gone.id], ['records', 2147483647], ['notes', 7]] as const) {
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const res = await app.inject({ method, url: `/api/v1/${name}/${id}`, ...(method === 'PUT' ? { payload: { title: 'x' } } : {}) })
      t.equal(res.statusCode, 404, `${method} ${name} ${id}`)
      t.equal(res.headers['content-type'], PROBLEM_TYPE)
      t.same(res.json(), notFound(name, id))
    }
  }
  t.equal((await app.inject({ method: 'GET', url: `${NOTES}/7` })).json().detail, 'notes 7 not found')
})

t.test('an id that is not an integer from 1 to 2147483647 is 422 on GET, PUT and DELETE, never a 500', async (t) => {
  const cases: Array<[string, string]> = [
    ['abc', 'must be integer'], ['1.5', 'must be integer'], ['1e400', 'must be integer'], ['Infinity', 'must be integer'],
    ['0', 'must be >= 1'], ['-1', 'must be >= 1'], ['2147483648', 'must be <= 2147483647']
  ]
  for (const [id, message] of cases) {
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const res = await app.inject({ method, url: `${RECORDS}/${id}`, ...(method === 'PUT' ? { payload: { title: 'x' } } : {}) })
      t.equal(res.statusCode, 422, `${method} ${id}`)
      t.same(res.json(), validationProblem(['/params/records_id', message]), `${method} ${id}`)
    }
  }
})

t.test('PUT changes only the fields present', async (t) => {
  const record = await createRecord(app, 'records', { title: 'original', description: 'original text' })
  const url = `${RECORDS}/${record.id}`
  const put = async (payload?: object) => {
    const res = await app.inject({ method: 'PUT', url, ...(payload ? { payload } : {}) })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-type'], JSON_TYPE)
    return res.json()
  }
  t.same(await put({ title: 'renamed' }), { ...record, title: 'renamed' }, 'title alone: description kept')
  t.same(await put({ description: 'new text' }), { ...record, title: 'renamed', description: 'new text' }, 'description alone: title kept')
  t.same(await put({ description: null }), { ...record, title: 'renamed', description: null }, 'description: null clears it')
  t.same(await put({ title: 'both', description: 'both' }), { id: record.id, title: 'both', description: 'both' }, 'both fields')
  t.same(await put({}), { id: record.id, title: 'both', description: 'both' }, 'an empty body changes nothing')
  t.same(await put(), { id: record.id, title: 'both', description: 'both' }, 'no body at all changes nothing')
  t.same(await put({ id: 12345, owner: 'me' }), { id: record.id, title: 'both', description: 'both' }, 'id and unknown fields are ignored')
  t.same((await app.inject({ method: 'GET', url })).json(), { id: record.id, title: 'both', description: 'both' }, 'stored')
})

t.test('PUT refuses a title that is not a non-empty string, and leaves the record alone', async (t) => {
  const record = await createRecord(app, 'records', { title: 'kept', description: 'kept' })
  const url = `${RECORDS}/${record.id}`
  const cases: Array<[object, string, string]> = [
    [{ title: null }, '/body/title', 'must be string'],
    [{ title: 123 }, '/body/title', 'must be string'],
    [{ title: '' }, '/body/title', 'must NOT have fewer than 1 characters'],
    [{ title: 'x'.repeat(256) }, '/body/title', 'must NOT have more than 255 characters'],
    [{ title: 'a\u0000b' }, '/body/title', 'must not contain NUL characters'],
    [{ description: 5 }, '/body/description', 'must be string,null'],
    [{ description: false }, '/body/description', 'must be string,null']
  ]
  for (const [payload, path, message] of cases) {
    const res = await app.inject({ method: 'PUT', url, payload })
    t.equal(res.statusCode, 422, JSON.stringify(payload))
    t.same(res.json(), validationProblem([path, message]), JSON.stringify(payload))
  }
  const array = await app.inject({ method: 'PUT', url, payload: [] })
  t.same(array.json(), validationProblem(['/body', 'must be object']), 'an array is not a body')
  t.same((await app.inject({ method: 'GET', url })).json(), record, 'unchanged')
})

t.test('POST refuses a missing or bad title and a bad description with 422; bad JSON with 400', async (t) => {
  const cases: Array<[unknown, string, string]> = [
    [{}, '/body/title', 'is required'],
    [{ description: 'no title' }, '/body/title', 'is required'],
    [{ title: null }, '/body/title', 'must be string'],
    [{ title: 7 }, '/body/title', 'must be string'],
    [{ title: '' }, '/body/title', 'must NOT have fewer than 1 characters'],
    [{ title: 'x'.repeat(256) }, '/body/title', 'must NOT have more than 255 characters'],
    [{ title: 'nul\u0000' }, '/body/title', 'must not contain NUL characters'],
    [{ title: 'ok', description: 1 }, '/body/description', 'must be string,null'],
    [{ title: 'ok', description: 'x'.repeat(10_001) }, '/body/description', 'must NOT have more than 10000 characters'],
    [{ title: 'ok', description: 'nul\u0000' }, '/body/description', 'must not contain NUL characters'],
    [['title'], '/body/0', 'must be object']
  ]
  const before = await list(`${RECORDS}/`)
  for (const [payload, path, message] of cases) {
    const res = await app.inject({ method: 'POST', url: RECORDS, payload: payload as object })
    t.equal(res.statusCode, 422, JSON.stringify(payload).slice(0, 40))
    t.equal(res.headers['content-type'], PROBLEM_TYPE)
    t.same(res.json(), validationProblem([path, message]), JSON.stringify(payload).slice(0, 40))
  }
  t.ok(await createRecord(app, 'records', { title: 'x'.repeat(255), description: 'x'.repeat(10_000) }), 'the limits themselves are accepted')
  const malformed = await app.inject({ method: 'POST', url: RECORDS, headers: { 'content-type': 'application/json' }, payload: '{"title":' })
  t.equal(malformed.statusCode, 400)
  t.equal(malformed.json().code, 'MALFORMED_BODY')
  t.equal((await list(`${RECORDS}/`)).length, before.length + 1, 'only the valid record was stored')
})

t.test('DELETE answers 204 with no body; the record is gone and a second DELETE is 404', async (t) => {
  const record = await createRecord(app, 'records', { title: 'bin' })
  const res = await app.inject({ method: 'DELETE', url: `${RECORDS}/${record.id}` })
  t.equal(res.statusCode, 204)
  t.equal(res.payload, '')
  t.equal(res.headers['content-type'], undefined)
  t.equal((await app.inject({ method: 'GET', url: `${RECORDS}/${record.id}` })).statusCode, 404)
  t.same((await app.inject({ method: 'DELETE', url: `${RECORDS}/${record.id}` })).json(), notFound('records', record.id))
})

t.test('every route answers with and without the trailing slash', async (t) => {
  for (const url of [RECORDS, `${RECORDS}/`]) {
    const created = await app.inject({ method: 'POST', url, payload: { title: `via ${url}` } })
    t.equal(created.statusCode, 201, `POST ${url}`)
    const { id } = created.json()
    const listed = await app.inject({ method: 'GET', url })
    t.equal(listed.statusCode, 200, `GET ${url}`)
    t.ok(listed.json().some((record: { id: number }) => record.id === id))
    for (const item of [`${RECORDS}/${id}`, `${RECORDS}/${id}/`]) {
      t.equal((await app.inject({ method: 'GET', url: item })).statusCode, 200, `GET ${item}`)
      t.equal((await app.inject({ method: 'PUT', url: item, payload: { title: 'renamed' } })).statusCode, 200, `PUT ${item}`)
    }
    t.equal((await app.inject({ method: 'DELETE', url: `${RECORDS}/${id}/` })).statusCode, 204, 'DELETE with slash')
  }
})

t.test('the list is a bare JSON array of every record, ordered by id', async (t) => {
  const res = await app.inject({ method: 'GET', url: `${NOTES}/` })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], JSON_TYPE)
  t.equal(res.headers.link, undefined, 'no next page')
  t.same(res.json(), [
    { id: 1, title: 'a note', description: 'in notes' },
    { id: 2, title: 'another note', description: null }
  ])
})
