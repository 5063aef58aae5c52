import Image from 'next/image'

// Three ways a page uses next/image, each a srcset of thumbd URLs: a hero
// as wide as the viewport (deviceSizes), a fixed-size card (1x and 2x from
// imageSizes and deviceSizes), and a small avatar. The names are files of
// thumbd's source directory (THUMBD_SOURCE).
export default function Page() {
  return (
    <main>
      <div style={{ position: 'relative', width: '100%', height: 300 }}>
        <Image id="hero" src="photo12.jpg" alt="hero" fill sizes="100vw" style={{ objectFit: 'cover' }} loading="eager" />
      </div>
      <Image id="card" src="photo12.jpg" alt="card" width={300} height={200} loading="eager" />
      <Image id="avatar" src="large.jpg" alt="avatar" width={64} height={64} quality={75} loading="eager" />
    </main>
  )
}
