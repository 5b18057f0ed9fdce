import { randomUUID } from 'node:crypto'
import { rm, writeFile } from 'node:fs/promises'
import t from 'tap'
import { clusterClient } from '../support/cluster-http.js'
import { loadLoops } from '../support/cluster-load.js'
import { untilServing } from '../support/cluster-nginx.js'
import { clusterSkip, startTopology, type Cluster } from '../support/cluster.js'

// A RESOURCES_FILE change rolled out one instance at a time: the first new instance changes the
// table in one step while the old ones keep serving their definition.
const skip = clusterSkip
const title = { type: 'string', minLength: 1, maxLength: 200 }
const V1 = {
  notes: { fields: { type: 'object', required: ['title'], properties: { title, priority: { type: 'integer', minimum: 1, maximum: 5, default: 3 } } } }
}
// A new resource, and on notes a new field with a unique key and a new reference to it.
const V2 = {
  projects: { fields: { type: 'object', required: ['name'], properties: { name: title } } },
  notes: {
    fields: {
      type: 'object',
      required: ['title'],
      properties: {
        title,
        priority: { type: 'integer', minimum: 1, maximum: 5, default: 3 },
        slug: { type: ['string', 'null'], maxLength: 60 },
        project_id: { type: ['integer', 'null'], 'x-references': 'projects', 'x-on-delete': 'set-null' }
      }
    },
    unique: ['slug']
  }
}

/** What of V2 the notes table has, read in one statement (one snapshot). */
async function notesSchema (sql: Cluster['sql']) {
  const [row] = await sql<Array<{ slug: boolean, project_id: boolean, slug_key: boolean, project_fkey: boolean, projects: boolean }>>`
    select
      exists (select from information_schema.columns where table_name = 'notes' and column_name = 'slug') as slug,
      exists (select from information_schema.columns where table_name = 'notes' and column_name = 'project_id') as project_id,
      exists (select from pg_indexes where tablename = 'notes' and indexname = 'notes_slug_key') as slug_key,
      exists (select from pg_constraint where conname = 'notes_project_id_fkey') as project_fkey,
      to_regclass('projects') is not null as projects`
  return row!
}

t.test('a RESOURCES_FILE change rolled out one instance at a time', { skip }, async (t) => {
  const v1 = `/tmp/plinth-cluster-rollout-v1-${process.pid}.json`
  const v2 = `/tmp/plinth-cluster-rollout-v2-${process.pid}.json`
  await writeFile(v1, JSON.stringify(V1))
  await writeFile(v2, JSON.stringify(V2))
  t.teardown(() => Promise.all([rm(v1, { force: true }), rm(v2, { force: true })]))
  const { cluster, instances, nginx } = await startTopology(t, { env: { RESOURCES_FILE: v1 } })
  t.same(await notesSchema(cluster.sql), { slug: false, project_id: false, slug_key: false, project_fkey: false, projects: false }, 'the table as V1 has it')

  const run = randomUUID()
  const client = clusterClient(nginx.base, '127.0.0.51', 4)
  t.teardown(() => client.close())
  // Bodies both definitions take: old and new instances answer them alike.
  const load = loadLoops(t, client, 4, (_client, loop, i) => i % 2 === 0
    ? { method: 'POST', path: '/api/v1/notes/', json: { title: `rollout ${run} ${loop}-${i}` } }
    : { path: '/api/v1/notes/?sort=-id&limit=5' })
  await load.reach(40)

  // Every snapshot of the schema while the first new instance starts: V1 or V2, nothing between.
  const seen = new Set<string>()
  const watch = { on: true }
  const watcher = (async () => {
    while (watch.on) seen.add(JSON.stringify(await notesSchema(cluster.sql)))
  })()
  const [first, ...others] = instances as [typeof instances[0], ...typeof instances]
  t.same(await first.stop('SIGTERM'), [0, null], `${first.name} stopped`)
  await first.start({ RESOURCES_FILE: v2 })
  await untilServing(nginx, first)
  watch.on = false
  await watcher
  const all = { slug: true, project_id: true, slug_key: true, project_fkey: true, projects: true }
  t.comment(`schema states seen while ${first.name} started on V2: ${[...seen].join(' ')}`)
  // Each table changes in a transaction of its own: projects may exist before notes changes, but
  // notes has all of its change or none of it.
  const notesStates = [...seen].map((state) => JSON.parse(state) as typeof all)
  t.ok(notesStates.every(({ projects, ...notes }) => new Set(Object.values(notes)).size === 1), 'the notes table never half-migrated')
  t.ok(notesStates.every((state) => state.projects || !state.project_fkey), 'no reference before its table')
  t.same(await notesSchema(cluster.sql), all, `the tables as V2 has them once ${first.name} serves`)

  // The old instances, asked directly, still serve V1 on the changed table.
  for (const old of others) {
    const direct = clusterClient(old.base, '127.0.0.52')
    t.teardown(() => direct.close())
    const created = await direct.send('/api/v1/notes/', { json: { title: `old ${old.name} ${run}` } })
    t.equal(created.status, 201, `${old.name} (V1) creates on the V2 table`)
    t.notOk('slug' in (created.json ?? {}), 'in its V1 shape')
    t.equal((await direct.send(`/api/v1/notes/${created.json.id}`)).status, 200, `${old.name} reads it`)
    t.equal((await direct.send('/api/v1/projects/')).status, 404, `${old.name} has no projects yet`)
  }

  for (const one of others) {
    t.same(await one.stop('SIGTERM'), [0, null], `${one.name} stopped`)
    await one.start({ RESOURCES_FILE: v2 })
    await untilServing(nginx, one)
  }
  const answers = await load.stop()
  const failed = answers.filter((answer) => answer.status < 200 || answer.status >= 300)
  t.comment(`${answers.length} requests through nginx during the rollout, ${failed.length} failed${failed.length ? `: ${JSON.stringify(failed.slice(0, 5))}` : ''}; instances at ${instances.map((one) => `${one.name} ${one.address}`).join(', ')}`)
  if (failed.length > 0) t.comment(`nginx error log:\n${nginx.problems().slice(-20).join('\n')}`)
  t.equal(failed.length, 0, 'every request through nginx answered 2xx')
  const ids = answers.filter((answer) => answer.status === 201).map((answer) => answer.id!)
  const [stored] = await cluster.sql<Array<{ count: number }>>`select count(*)::int as count from notes where id = any(${ids}::int[])`
  t.equal(stored?.count, ids.length, 'every acknowledged note is in the primary')

  // V2 everywhere: its key and its reference hold on every instance.
  const project = await client.send('/api/v1/projects/', { json: { name: 'plinth' } })
  t.equal(project.status, 201)
  const slug = `slug-${run}`
  const note = await client.send('/api/v1/notes/', { json: { title: 'with a slug', slug, project_id: project.json.id } })
  t.equal(note.status, 201)
  t.equal(note.json.project_id, project.json.id)
  for (const one of instances) {
    const direct = clusterClient(one.base, '127.0.0.53')
    t.teardown(() => direct.close())
    const duplicate = await direct.send('/api/v1/notes/', { json: { title: 'same slug', slug } })
    t.equal(duplicate.status, 409, `${one.name}: a taken slug`)
    t.equal(duplicate.json.code, 'RESOURCE_CONFLICT')
    const dangling = await direct.send('/api/v1/notes/', { json: { title: 'no such project', project_id: 999_999 } })
    t.equal(dangling.status, 422, `${one.name}: a project that does not exist`)
  }
})
