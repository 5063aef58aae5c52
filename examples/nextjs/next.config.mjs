// The two settings that point next/image at thumbd: the loader file here,
// and NEXT_PUBLIC_THUMBD_URL (read when the site is built). The sizes and
// qualities are Next.js's defaults, written out because thumbd's
// allow-lists must be the same (README.md).
export default {
  images: {
    loader: 'custom',
    loaderFile: './thumbd-loader.js',
    deviceSizes: [640, 750, 828, 1080, 1200, 1920, 2048, 3840],
    imageSizes: [32, 48, 64, 96, 128, 256, 384],
    qualities: [75],
  },
}
