import t from 'tap'
import { ITEMS, buildCatalog, createItem, type ItemBody } from '../../support/catalog.js'

// Default page size 5, maximum 10 (LIMITS in test/support/catalog.ts).
const app = await buildCatalog(t)
const NAMES = [
  'Red LAMP', 'red lamp shade', 'lampshade', 'Discount 100%', '100 percent', 'snake_case', 'snakeXcase',
  'back\\slash', 'backslash', 'plain', 'under_score_twice', '50% off_now', 'a%b', 'LAMP post', 'Ünïcode'
]
const byName = new Map<string, ItemBody>()
for (const name of NAMES) byName.set(name, await createItem(app, { name, price: 1 }))
const items = (...names: string[]) => names.map((name) => byName.get(name))

async function search (q: string, extra = '') {
  const res = await app.inject({ method: 'GET', url: `${ITEMS}?q=${encodeURIComponent(q)}${extra}` })
  if (res.statusCode !== 200) throw new Error(`q=${q}: ${res.statusCode} ${res.payload}`)
  return res.json()
}

t.test('?q= matches a case-insensitive substring of the name; total counts the matches', async (t) => {
  const lamps = items('Red LAMP', 'red lamp shade', 'lampshade', 'LAMP post')
  for (const q of ['lamp', 'LAMP', 'lAmP']) {
    t.same(await search(q), { items: lamps, total: 4, offset: 0, limit: 5, has_next: false }, q)
  }
  t.same(await search('lamp shade'), { items: items('red lamp shade'), total: 1, offset: 0, limit: 5, has_next: false })
  t.same(await search('Ünï'), { items: items('Ünïcode'), total: 1, offset: 0, limit: 5, has_next: false })
})

t.test('%, _ and \\ in the search text match themselves, not as wildcards', async (t) => {
  const cases: Array<[string, string[]]> = [
    ['%', ['Discount 100%', '50% off_now', 'a%b']],
    ['100%', ['Discount 100%']],
    ['_', ['snake_case', 'under_score_twice', '50% off_now']],
    ['e_c', ['snake_case']],
    ['% off_', ['50% off_now']],
    ['\\', ['back\\slash']],
    ['k\\s', ['back\\slash']],
    ['%%', []],
    ['__', []]
  ]
  for (const [q, names] of cases) {
    const page = await search(q, '&limit=10')
    t.same(page, { items: items(...names), total: names.length, offset: 0, limit: 10, has_next: false }, `q=${q}`)
  }
})

t.test('search results page with offset and with after_id', async (t) => {
  const lamps = items('Red LAMP', 'red lamp shade', 'lampshade', 'LAMP post')
  t.same(await search('lamp', '&limit=2'), { items: lamps.slice(0, 2), total: 4, offset: 0, limit: 2, has_next: true })
  t.same(await search('lamp', '&limit=2&offset=2'), { items: lamps.slice(2), total: 4, offset: 2, limit: 2, has_next: false })
  const seen = []
  let page
  let after = 0
  do {
    page = await search('lamp', `&limit=1&after_id=${after}`)
    t.equal(page.total, 4)
    seen.push(...page.items)
    after = page.items.at(-1)?.id ?? after
  } while (page.has_next)
  t.same(seen, lamps, 'every match once, in id order')
})

t.test('no match is an empty page; an empty q does not filter', async (t) => {
  t.same(await search('zzz'), { items: [], total: 0, offset: 0, limit: 5, has_next: false })
  const all = await search('')
  t.equal(all.total, NAMES.length)
  t.same(all.items, items(...NAMES.slice(0, 5)))
})
