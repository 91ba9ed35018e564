import { create } from 'qrcode';

const SVG = 'http://www.w3.org/2000/svg';

/**
 * The QR code as an SVG built with DOM calls: no image load, no data: URL and no style attribute,
 * so the strict CSP needs nothing more. A four-module quiet zone surrounds it, as scanners expect.
 */
export function qrSvg(text: string, label: string): SVGSVGElement {
  const { modules } = create(text, { errorCorrectionLevel: 'M' });
  const size = modules.size;
  const quiet = 4;
  let d = '';
  for (let row = 0; row < size; row++) {
    for (let col = 0; col < size; col++) {
      if (modules.get(row, col)) d += `M${col + quiet} ${row + quiet}h1v1h-1z`;
    }
  }
  const svg = document.createElementNS(SVG, 'svg');
  const total = size + quiet * 2;
  svg.setAttribute('viewBox', `0 0 ${total} ${total}`);
  svg.setAttribute('class', 'qr');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.setAttribute('shape-rendering', 'crispEdges');
  const background = document.createElementNS(SVG, 'rect');
  background.setAttribute('width', String(total));
  background.setAttribute('height', String(total));
  background.setAttribute('fill', '#ffffff');
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', d);
  path.setAttribute('fill', '#000000');
  svg.append(background, path);
  return svg;
}
