import t from 'tap'
import { changes, type SchemaState } from '../../db/migrate.js'

// What `plinth migrate` prints: what it changed, in one line, or that it changed nothing.

const state = (migrations: number, tables: string[] = [], definitions: Record<string, string> = {}): SchemaState =>
  ({ migrations, tables: new Set(tables), definitions: new Map(Object.entries(definitions)) })

t.test('migrate says what it applied, created and updated, and what was up to date', async (t) => {
  t.equal(changes(state(0), state(1, ['records']), ['records'], 'pglite'), 'applied 1 migration; created the table records (pglite)')
  t.equal(changes(state(9, ['records', 'notes'], { notes: '{"a":1}' }), state(10, ['records', 'notes'], { notes: '{"a":2}' }), ['records', 'notes', 'records'], 'postgres'),
    'applied 1 migration; updated the table notes; records up to date (postgres)')
  t.equal(changes(state(8, ['a']), state(10, ['a', 'b', 'c']), ['a', 'b', 'c'], 'postgres'), 'applied 2 migrations; created the tables b, c; a up to date (postgres)')
})

t.test('migrate that changed nothing says so, with or without resource tables', async (t) => {
  t.equal(changes(state(10, ['records']), state(10, ['records']), ['records'], 'pglite'), 'nothing to do: 10 migrations applied before; records up to date (pglite)')
  t.equal(changes(state(1), state(1), [], 'postgres'), 'nothing to do: 1 migration applied before (postgres)', 'RESOURCES=none')
})
