// Renders the example page in headless Chromium (Debian's package) with
// thumbd behind next/image's loader, and checks what a person would see:
// every image came from thumbd through its srcset, each answer was a 200
// at the width asked, in a format the browser's Accept takes, and each
// image decoded and drew. With thumbd's allow-lists set to next.config.mjs'
// sizes (scripts/test-nextjs.sh does), nothing the page asks for is
// refused, and a width off the lists is.
//
// Env: THUMBD_URL (thumbd), SITE_URL (the built site, `next start`),
// CHROMIUM (default /usr/bin/chromium), OUT (where the screenshot goes).
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import puppeteer from 'puppeteer-core'
import config from '../next.config.mjs'

const thumbd = process.env.THUMBD_URL
const site = process.env.SITE_URL
const out = process.env.OUT || '.'
const sizes = [...config.images.imageSizes, ...config.images.deviceSizes]

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  // No sandbox: the test may run as root (CI), which Chromium's sandbox refuses.
  args: ['--no-sandbox', '--disable-gpu'],
})
// visit renders the page at viewport in a context of its own (an empty
// HTTP cache: every image is asked of thumbd) and checks it.
async function visit(viewport) {
  const context = await browser.createBrowserContext()
  const page = await context.newPage()
  await page.setViewport(viewport)
  const at = `${viewport.width}x${viewport.height} at DPR ${viewport.deviceScaleFactor}`
  const asked = new Map() // thumbd URL -> {status, type, body, failed}
  page.on('request', (req) => {
    if (req.url().startsWith(thumbd) && !asked.has(req.url())) asked.set(req.url(), {})
  })
  // The Accept header the network stack sent (puppeteer's request headers
  // are the page's, without it).
  const cdp = await page.createCDPSession()
  await cdp.send('Network.enable')
  // The two events come in either order.
  const urls = new Map() // request ID -> URL
  const accepts = new Map() // request ID -> Accept
  cdp.on('Network.requestWillBeSent', (e) => urls.set(e.requestId, e.request.url))
  cdp.on('Network.requestWillBeSentExtraInfo', (e) => {
    const accept = Object.entries(e.headers).find(([k]) => k.toLowerCase() === 'accept')
    if (accept) accepts.set(e.requestId, accept[1])
  })
  const acceptOf = (url) => [...urls].filter(([, u]) => u === url).map(([id]) => accepts.get(id)).find(Boolean)
  page.on('response', async (res) => {
    const entry = asked.get(res.url())
    if (!entry || entry.status) return
    entry.status = res.status()
    entry.type = res.headers()['content-type']
    entry.body = res.buffer().catch(() => null)
  })
  page.on('requestfailed', (req) => {
    const entry = asked.get(req.url())
    if (entry && !entry.status) entry.failed = req.failure()?.errorText
  })
  await page.goto(site, { waitUntil: 'networkidle0' })

  const images = await page.$$eval('img', (imgs) =>
    imgs.map((img) => {
      const r = img.getBoundingClientRect()
      return {
        id: img.id, srcset: img.srcset, currentSrc: img.currentSrc, complete: img.complete,
        naturalWidth: img.naturalWidth, box: { x: r.x, y: r.y, width: r.width, height: r.height },
      }
    }),
  )
  assert.equal(images.length, 3, 'the page has three images')

  // The browser asked thumbd for what the srcsets offer, and only that.
  const offered = new Set(images.flatMap((i) => i.srcset.split(', ').map((c) => c.split(' ')[0])))
  assert.ok(asked.size >= images.length, `thumbd was asked ${asked.size} times for ${images.length} images`)
  for (const url of asked.keys()) assert.ok(offered.has(url), `${url} is in no srcset`)
  for (const img of images) {
    assert.ok(img.currentSrc.startsWith(`${thumbd}/thumbnail?`), `#${img.id} drew ${img.currentSrc}, not a thumbd URL`)
    assert.ok(asked.has(img.currentSrc), `#${img.id}: ${img.currentSrc} was not requested`)
  }

  // Each answer: 200, the width asked (as the browser decodes it), in a
  // format the browser's Accept header named.
  const rows = []
  for (const [url, entry] of asked) {
    const w = Number(new URL(url).searchParams.get('w'))
    assert.equal(entry.status, 200, `${url}: ${entry.status ?? entry.failed} (thumbd's log: $OUT/thumbd.log)`)
    assert.ok(sizes.includes(w), `${url}: w=${w} is not one of next.config.mjs' sizes`)
    const body = await entry.body
    assert.ok(body && body.length > 0, `${url}: no body`)
    const decoded = await page.evaluate(async (u) => {
      const img = new Image()
      img.src = u
      await img.decode()
      return img.naturalWidth
    }, url)
    assert.equal(decoded, w, `${url}: the browser decodes it ${decoded} wide`)
    const mime = entry.type.split(';')[0]
    const accept = acceptOf(url)
    assert.ok(accept, `${url}: no Accept header seen`)
    assert.ok(accept.split(',').some((a) => a.split(';')[0].trim() === mime), `${url}: ${mime} is not in Accept: ${accept}`)
    rows.push({ w, mime, bytes: body.length })
  }

  // Each image decoded and drew: a screenshot of where it stands is far
  // from blank (the page's white).
  const shot = await page.screenshot({ fullPage: true })
  await writeFile(`${out}/nextjs-page-${viewport.width}x${viewport.deviceScaleFactor}.png`, shot)
  for (const img of images) {
    assert.ok(img.complete && img.naturalWidth > 0, `#${img.id} did not decode`)
    const clip = { x: img.box.x, y: img.box.y, width: Math.min(img.box.width, viewport.width), height: img.box.height }
    const png = await page.screenshot({ clip, encoding: 'base64' })
    const drawn = await page.evaluate(async (data) => {
      const bitmap = await createImageBitmap(await (await fetch(`data:image/png;base64,${data}`)).blob())
      const canvas = new OffscreenCanvas(bitmap.width, bitmap.height)
      const ctx = canvas.getContext('2d')
      ctx.drawImage(bitmap, 0, 0)
      const px = ctx.getImageData(0, 0, bitmap.width, bitmap.height).data
      let inked = 0
      for (let i = 0; i < px.length; i += 4) if (px[i] < 245 || px[i + 1] < 245 || px[i + 2] < 245) inked++
      return inked / (px.length / 4)
    }, png)
    assert.ok(drawn > 0.5, `#${img.id}: only ${(drawn * 100).toFixed(1)} % of its box is drawn`)
    console.log(`${at}: #${img.id}: ${img.box.width}x${img.box.height} css px, drew ${img.currentSrc.replace(thumbd, '')}, ${(drawn * 100).toFixed(1)} % of its box inked`)
  }
  for (const r of rows) console.log(`${at}: thumbd answered w=${r.w}: ${r.mime}, ${r.bytes} bytes`)

  await context.close()
}

try {
  // A laptop, then a phone-sized viewport at DPR 2: other srcset candidates.
  await visit({ width: 1280, height: 800, deviceScaleFactor: 1 })
  await visit({ width: 800, height: 600, deviceScaleFactor: 2 })

  // The allow-list: a width the page could never ask for is refused.
  const off = await fetch(`${thumbd}/thumbnail?src=photo12.jpg&w=1000&q=75&format=auto`)
  const refusal = await off.json()
  assert.equal(off.status, 400)
  assert.equal(refusal.code, 'bad_parameter')
  assert.match(refusal.error, /828 and 1080/)
  console.log(`w=1000: ${off.status} ${refusal.error}`)
} finally {
  await browser.close()
}
