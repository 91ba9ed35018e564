/*
 * Small line icons drawn as SVG through the DOM (no markup strings, nothing loaded: the CSP allows
 * neither inline markup nor other origins). Decorative: hidden from screen readers, whose text
 * beside them says the same.
 */

const SVG = 'http://www.w3.org/2000/svg';

/** Paths on a 24×24 grid, stroked with the text colour. */
const SHAPES: Record<string, string[]> = {
  desktop: ['M3 5h18v11H3z', 'M8 20h8', 'M12 16v4'],
  laptop: ['M5 6h14v9H5z', 'M2 18h20'],
  mobile: ['M7 2h10v20H7z', 'M11 18h2'],
  tablet: ['M5 3h14v18H5z', 'M11 18h2'],
  unknown: [
    'M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18z',
    'M9.5 9.5a2.5 2.5 0 1 1 3.5 2.3c-.6.3-1 .9-1 1.6v.6',
    'M12 17h.01',
  ],
};

/** The icon of a device type as the service names it (desktop, mobile, tablet, … or unknown). */
export function deviceIcon(type: string | null | undefined): SVGSVGElement {
  const shape = SHAPES[type ?? ''] ?? SHAPES.unknown;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '24');
  svg.setAttribute('height', '24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  svg.setAttribute('class', 'device-icon');
  for (const d of shape) {
    const path = document.createElementNS(SVG, 'path');
    path.setAttribute('d', d);
    svg.appendChild(path);
  }
  return svg;
}

/** The eye of a show-password toggle: open (the password is hidden: press to show), or struck through. */
export function eyeIcon(struck: boolean): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '20');
  svg.setAttribute('height', '20');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  svg.setAttribute('class', 'eye-icon');
  const shapes = ['M2 12s3.6-7 10-7 10 7 10 7-3.6 7-10 7S2 12 2 12z', 'M12 9a3 3 0 1 0 0 6a3 3 0 1 0 0-6z'];
  if (struck) shapes.push('M4 4l16 16');
  for (const d of shapes) {
    const path = document.createElementNS(SVG, 'path');
    path.setAttribute('d', d);
    svg.appendChild(path);
  }
  return svg;
}
