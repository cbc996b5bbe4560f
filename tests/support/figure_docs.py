"""Generated documents with figures whose content is known: bar charts, labelled diagrams and captioned
photos drawn with Pillow, placed in PDF (reportlab), DOCX (python-docx), PPTX (python-pptx), HTML (a
``data:`` image) and EPUB (an image member), beside decoration (a logo on every page, a bullet icon, a
thin rule). Tests and ``benchmarks.figures`` both build from here, so what is measured is what is tested.
"""

from __future__ import annotations

import base64
import io
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.office import epub_package

_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


@dataclass(frozen=True)
class FigureSpec:
    """One figure: what is drawn in it (``labels``), its caption and alt text, and a question only it
    answers (its words are in the labels or the caption, never in the document's text)."""

    kind: str  # "chart" | "diagram" | "photo"
    title: str
    labels: Sequence[str]
    caption: str = ""
    alt: str = ""
    question: str = ""
    values: Sequence[int] = field(default_factory=tuple)


def font(size: int) -> Any:
    from PIL import ImageFont

    try:
        return ImageFont.truetype(_FONT, size)
    except OSError:
        return ImageFont.load_default()


def draw_figure(spec: FigureSpec, size: tuple[int, int] = (900, 560), *, mode: str = "RGB") -> Any:
    """The figure as a Pillow image: a bar chart with its category labels, a diagram of labelled boxes
    joined by arrows, or a "photo" (noise and shapes) with no words in it."""
    from PIL import Image, ImageDraw

    width, height = size
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    if spec.kind == "chart":
        draw.text((30, 16), spec.title, fill="black", font=font(34))
        values = list(spec.values) or [40 + 17 * index for index in range(len(spec.labels))]
        step = (width - 80) // max(1, len(spec.labels))
        top = max(values)
        for index, (label, value) in enumerate(zip(spec.labels, values, strict=False)):
            x = 50 + index * step
            bar = int((height - 190) * value / top)
            draw.rectangle((x, height - 90 - bar, x + step // 2, height - 90), fill=(70, 110, 180))
            draw.text((x, height - 80), label, fill="black", font=font(28))
        draw.line((40, height - 90, width - 20, height - 90), fill="black", width=3)
    elif spec.kind == "diagram":
        draw.text((30, 16), spec.title, fill="black", font=font(34))
        count = max(1, len(spec.labels))
        box_w = (width - 60) // count - 40
        for index, label in enumerate(spec.labels):
            x = 30 + index * (box_w + 40)
            draw.rectangle((x, 200, x + box_w, 320), outline="black", width=4)
            draw.text((x + 12, 245), label, fill="black", font=font(26))
            if index:
                draw.line((x - 40, 260, x - 4, 260), fill="black", width=4)
    else:
        import random

        rng = random.Random(spec.title)
        for _ in range(60):
            x, y = rng.randrange(width), rng.randrange(height)
            colour = tuple(rng.randrange(256) for _ in range(3))
            draw.ellipse((x, y, x + rng.randrange(20, 160), y + rng.randrange(20, 160)), fill=colour)
    return image.convert(mode) if mode != "RGB" else image


def png(image: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def jpeg(image: Any, **options: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90, **options)
    return out.getvalue()


def logo() -> bytes:
    """A small company logo: repeated on every page, it is page furniture, not a figure."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (220, 80), "white")
    ImageDraw.Draw(image).text((10, 20), "ACME Corp", fill=(200, 30, 30), font=font(32))
    return png(image)


def bullet() -> bytes:
    """A 16-pixel bullet icon: under the size floor."""
    from PIL import Image

    return png(Image.new("RGB", (16, 16), (20, 20, 20)))


def rule() -> bytes:
    """A thin horizontal rule drawn as an image (600 x 4)."""
    from PIL import Image

    return png(Image.new("RGB", (600, 4), (120, 120, 120)))


# --- documents -----------------------------------------------------------------------------------------
def figure_pdf(
    figures: Sequence[FigureSpec], *, intro: str, title: str = "Figures", decoration: bool = True
) -> bytes:
    """One page per figure: a heading, a paragraph of ``intro``, the image, its caption line below it;
    with ``decoration``, a logo in every page's corner and a bullet icon and a rule on the first page."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    pdf.setTitle(title)
    for number, spec in enumerate(figures, start=1):
        pdf.setFont("Helvetica-Bold", 16)
        pdf.drawString(50, 800, f"Section {number}: {spec.title.split()[0]} overview")
        pdf.setFont("Helvetica", 11)
        pdf.drawString(50, 775, intro)
        if decoration:
            pdf.drawImage(ImageReader(io.BytesIO(logo())), 440, 800, width=110, height=40)
            if number == 1:
                pdf.drawImage(ImageReader(io.BytesIO(bullet())), 50, 740, width=8, height=8)
                pdf.drawImage(ImageReader(io.BytesIO(rule())), 50, 730, width=400, height=3)
        pdf.drawImage(ImageReader(io.BytesIO(png(draw_figure(spec)))), 50, 380, width=450, height=280)
        if spec.caption:
            pdf.drawString(50, 360, spec.caption)
        pdf.drawString(50, 330, "The discussion continues after the figure with ordinary prose.")
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def figure_docx(figures: Sequence[FigureSpec], *, intro: str, title: str = "Figures") -> bytes:
    """A heading per figure, a paragraph, the picture (with its alt text) and a Caption paragraph."""
    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.core_properties.title = title
    for spec in figures:
        document.add_heading(f"{spec.title.split()[0]} overview", level=1)
        document.add_paragraph(intro)
        document.add_picture(io.BytesIO(png(draw_figure(spec))), width=Inches(5))
        if spec.alt:
            document.inline_shapes[-1]._inline.docPr.set("descr", spec.alt)
        if spec.caption:
            document.add_paragraph(spec.caption, style="Caption")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def figure_pptx(figures: Sequence[FigureSpec], *, title: str = "Figures") -> bytes:
    """A slide per figure: its title, the picture (alt text set) and a caption text box; every slide
    also carries the same logo picture (furniture)."""
    from pptx import Presentation
    from pptx.util import Inches, Pt

    presentation = Presentation()
    layout = presentation.slide_layouts[5]  # title only
    for spec in figures:
        slide = presentation.slides.add_slide(layout)
        slide.shapes.title.text = f"{spec.title.split()[0]} overview"
        picture = slide.shapes.add_picture(
            io.BytesIO(png(draw_figure(spec))), Inches(1), Inches(1.8), Inches(7)
        )
        if spec.alt:
            picture._element.nvPicPr.cNvPr.set("descr", spec.alt)
        slide.shapes.add_picture(io.BytesIO(logo()), Inches(8.2), Inches(6.8), Inches(1.5))
        if spec.caption:
            box = slide.shapes.add_textbox(Inches(1), Inches(6.3), Inches(7), Inches(0.5))
            box.text_frame.text = spec.caption
            box.text_frame.paragraphs[0].runs[0].font.size = Pt(14)
    presentation.core_properties.title = title
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def figure_html(figures: Sequence[FigureSpec], *, intro: str, title: str = "Figures") -> bytes:
    """``<figure>`` with a ``data:`` image and a ``<figcaption>`` per figure, a remote ``<img>`` that is
    never fetched, and a bullet icon."""
    parts = [f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"]
    icon = base64.b64encode(bullet()).decode()
    for spec in figures:
        data = base64.b64encode(png(draw_figure(spec))).decode()
        parts.append(
            f"<h2>{spec.title.split()[0]} overview</h2><p><img src='data:image/png;base64,{icon}'>{intro}</p>"
        )
        caption = f"<figcaption>{spec.caption}</figcaption>" if spec.caption else ""
        parts.append(f"<figure><img src='data:image/png;base64,{data}' alt='{spec.alt}'>{caption}</figure>")
    parts.append("<p><img src='https://example.com/tracker.png' alt='remote picture'></p></body></html>")
    return "".join(parts).encode()


def figure_epub(figures: Sequence[FigureSpec], *, intro: str, title: str = "Figures") -> bytes:
    """One chapter per figure, its image a member of the book (``images/figN.png``)."""
    chapters, images = [], []
    for number, spec in enumerate(figures, start=1):
        images.append((f"images/fig{number}.png", png(draw_figure(spec))))
        caption = f"<figcaption>{spec.caption}</figcaption>" if spec.caption else ""
        chapters.append(
            (
                f"ch{number}.xhtml",
                f'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c{number}'
                f"</title></head><body><h1>{spec.title.split()[0]} overview</h1><p>{intro}</p><figure>"
                f'<img src="images/fig{number}.png" alt="{spec.alt}"/>{caption}</figure></body></html>',
            )
        )
    return epub_package(title, chapters, images)


# The figures of the tests and the benchmark. Each question's answer words appear only in its figure.
CHART = FigureSpec(
    "chart",
    "Tram ridership 2025",
    ("Lisbon", "Porto", "Braga", "Coimbra"),
    caption="Figure 1: Tram ridership by city in 2025",
    alt="Bar chart of tram riders per city",
    question="which city had the most tram riders",
    values=(90, 55, 30, 20),
)
DIAGRAM = FigureSpec(
    "diagram",
    "Kiln firing stages",
    ("Drying", "Bisque", "Glazing"),
    caption="Figure 2: Stages of firing a kiln load",
    question="what happens after bisque firing",
)
PHOTO = FigureSpec(
    "photo",
    "Harbour photo",
    (),
    caption="Figure 3: Fishing boats moored at Nazaré harbour at dawn",
    alt="Photograph of fishing boats",
    question="boats moored at Nazaré",
)
SAMPLE_FIGURES = (CHART, DIAGRAM, PHOTO)
INTRO = "This report describes regional services; the figures below give the details."


# --- hostile images (the bad-input corpus) -------------------------------------------------------------
def docx_with_picture(picture: bytes, *, caption: str, intro: str = INTRO) -> bytes:
    """A DOCX holding ``picture`` as it is (its bytes are not checked or re-encoded) under a caption."""
    import docx

    document = docx.Document()
    document.add_paragraph(intro)
    placeholder = png(draw_figure(CHART))
    document.add_picture(io.BytesIO(placeholder))
    document.add_paragraph(caption, style="Caption")
    out = io.BytesIO()
    document.save(out)
    data = out.getvalue()
    # swap the placeholder's member for the hostile bytes: python-docx would refuse to embed some of them
    source, target = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for member in source.infolist():
            content = source.read(member.filename)
            archive.writestr(member, picture if content == placeholder else content)
    return target.getvalue()


def many_tiny_images_html(count: int = 10_000) -> bytes:
    """A page of ``count`` 16-pixel ``data:`` images (bullets, spacers) around one paragraph."""
    icon = base64.b64encode(bullet()).decode()
    images = f"<img src='data:image/png;base64,{icon}'>" * count
    return (f"<html><body><h1>Spacers</h1><p>{INTRO}</p><p>{images}</p></body></html>").encode()


def pdf_with_flate_bomb(inflated_bytes: int = 200_000_000) -> bytes:
    """A text page drawing an image XObject that declares 1,000 x 1,000 gray pixels and whose Flate
    stream inflates to ``inflated_bytes`` (about 200 KB on disk): a decompression bomb inside a PDF."""
    compressor = zlib.compressobj(9)
    chunk = b"\0" * (1 << 20)
    stream = b"".join(compressor.compress(chunk) for _ in range(inflated_bytes // len(chunk)))
    stream += compressor.flush()
    return pdf_with_image(stream, 1000, 1000, b"/DeviceGray")


def pdf_with_image(
    stream: bytes, width: int, height: int, colour_space: bytes, decode_parms: bytes = b"", caption: str = ""
) -> bytes:
    """A text page drawing one Flate image XObject written by hand (``stream`` as stored), so a test
    chooses exactly its filter parameters; ``caption`` is a line of text under it."""
    under = b" BT /F1 12 Tf 50 280 Td (" + caption.encode() + b") Tj ET" if caption else b""
    content = (
        b"BT /F1 12 Tf 50 780 Td (" + INTRO.encode() + b") Tj ET q 400 0 0 400 50 300 cm /Im1 Do Q" + under
    )
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace %s"
        % (width, height, colour_space)
        + b" /BitsPerComponent 8 /Filter /FlateDecode%s /Length %d >>\nstream\n" % (decode_parms, len(stream))
        + stream
        + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
