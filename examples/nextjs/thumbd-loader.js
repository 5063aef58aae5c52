// next/image's loader for thumbd: every <Image> of the site is a thumbd URL,
// one per width of its srcset. Loaders run in the browser and cannot sign,
// so the thumbd behind them runs unsigned, bounded by
// THUMBD_ALLOWED_WIDTHS and THUMBD_ALLOWED_QUALITIES set to the widths and
// qualities of next.config.mjs: a width or quality off those lists is a 400.
// format=auto gives each browser the best format its Accept header takes.
export default function thumbdLoader({ src, width, quality }) {
  const query = new URLSearchParams({ src, w: String(width), q: String(quality || 75), format: 'auto' })
  return `${process.env.NEXT_PUBLIC_THUMBD_URL}/thumbnail?${query}`
}
