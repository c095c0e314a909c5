//! A one-hop relation graph as inline SVG, laid out on the server: the anchor in the
//! middle, its neighbours evenly on a circle, one arrow per edge from source to target
//! (parallel edges bend apart), relation names at the edge midpoints. Colours come from
//! classes in the stylesheet; labels are escaped text like everything else.

use std::f64::consts::PI;

use maud::{Markup, html};

use super::text::clip;

/// Node radius in SVG units.
const RADIUS: f64 = 20.0;
/// Room around the circle for labels.
const MARGIN: f64 = 130.0;
/// Minimum arc length between neighbours.
const SPACING: f64 = 120.0;

/// One entity drawn as a node.
#[derive(Clone, Debug)]
pub struct Node {
    pub entity_type: String,
    pub entity_id: String,
    pub label: String,
    pub href: String,
}

/// One edge between the anchor and `neighbor` (an index into the neighbours).
#[derive(Clone, Debug)]
pub struct Edge {
    pub relation: String,
    /// The anchor is the source.
    pub outgoing: bool,
    pub neighbor: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    x: f64,
    y: f64,
}

/// Where the anchor and each neighbour sit, and the canvas size.
fn layout(count: usize) -> (f64, Point, Vec<Point>) {
    let radius = if count == 0 {
        0.0
    } else {
        (count as f64 * SPACING / (2.0 * PI)).max(200.0)
    };
    let size = 2.0 * (radius + MARGIN);
    let center = Point {
        x: size / 2.0,
        y: size / 2.0,
    };
    let points = (0..count)
        .map(|i| {
            let angle = -PI / 2.0 + 2.0 * PI * i as f64 / count as f64;
            Point {
                x: center.x + radius * angle.cos(),
                y: center.y + radius * angle.sin(),
            }
        })
        .collect();
    (size, center, points)
}

/// The path of an edge from `a` to `b`, bent by `bend` units, stopping at the node rims;
/// returns the path and the point at `t` (0 at `a`, 1 at `b`) where its label goes.
fn edge_path(a: Point, b: Point, bend: f64, t: f64) -> (String, Point) {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let length = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / length, dy / length);
    let control = Point {
        x: (a.x + b.x) / 2.0 - uy * bend,
        y: (a.y + b.y) / 2.0 + ux * bend,
    };
    let toward = |from: Point, to: Point| {
        let (vx, vy) = (to.x - from.x, to.y - from.y);
        let l = (vx * vx + vy * vy).sqrt().max(1.0);
        Point {
            x: from.x + vx / l * (RADIUS + 2.0),
            y: from.y + vy / l * (RADIUS + 2.0),
        }
    };
    let start = toward(a, control);
    let end = toward(b, control);
    let u = 1.0 - t;
    let mid = Point {
        x: u * u * start.x + 2.0 * u * t * control.x + t * t * end.x,
        y: u * u * start.y + 2.0 * u * t * control.y + t * t * end.y,
    };
    let path = format!(
        "M{:.1} {:.1} Q{:.1} {:.1} {:.1} {:.1}",
        start.x, start.y, control.x, control.y, end.x, end.y
    );
    (path, mid)
}

fn node(point: Point, node: &Node, class: &str) -> Markup {
    let label = clip(&node.label, 34);
    html! {
        a href=(node.href) {
            g class={ "node " (node.entity_type) " " (class) } {
                title { (node.entity_type) " " (node.entity_id) ": " (node.label) }
                @if node.entity_type == "artifact" {
                    rect x=(format!("{:.1}", point.x - RADIUS)) y=(format!("{:.1}", point.y - RADIUS))
                        width=(2.0 * RADIUS) height=(2.0 * RADIUS) rx="4" {}
                } @else {
                    circle cx=(format!("{:.1}", point.x)) cy=(format!("{:.1}", point.y)) r=(RADIUS) {}
                }
                text x=(format!("{:.1}", point.x)) y=(format!("{:.1}", point.y + RADIUS + 16.0)) text-anchor="middle" {
                    (label)
                }
            }
        }
    }
}

/// The graph around `anchor`.
pub fn svg(anchor: &Node, neighbors: &[Node], edges: &[Edge]) -> Markup {
    let (size, center, points) = layout(neighbors.len());
    let mut seen = vec![0usize; neighbors.len()];
    let drawn: Vec<(String, Point, &Edge)> = edges
        .iter()
        .filter(|edge| edge.neighbor < neighbors.len())
        .map(|edge| {
            let k = seen[edge.neighbor];
            seen[edge.neighbor] += 1;
            // 0, +28, -28, +56, ... so parallel edges fan out.
            let bend = if k == 0 {
                0.0
            } else {
                28.0 * k.div_ceil(2) as f64 * if k % 2 == 1 { 1.0 } else { -1.0 }
            };
            let other = points[edge.neighbor];
            let (from, to) = if edge.outgoing {
                (center, other)
            } else {
                (other, center)
            };
            // Labels sit nearer the neighbour, away from the crowded anchor.
            let t = if edge.outgoing { 0.72 } else { 0.28 };
            let (path, mid) = edge_path(from, to, bend, t);
            (path, mid, edge)
        })
        .collect();
    html! {
        svg.graph xmlns="http://www.w3.org/2000/svg" viewBox=(format!("0 0 {size:.0} {size:.0}"))
            width=(format!("{size:.0}")) height=(format!("{size:.0}")) role="img"
            aria-label="one-hop relation graph" {
            defs {
                marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                    path d="M0 0 L10 5 L0 10 z" class="arrowhead" {}
                }
            }
            @for (path, _, edge) in &drawn {
                path class={ "edge " (edge.relation) } d=(path) marker-end="url(#arrow)" {}
            }
            @for (_, mid, edge) in &drawn {
                text.edge-label x=(format!("{:.1}", mid.x)) y=(format!("{:.1}", mid.y - 4.0)) text-anchor="middle" { (edge.relation) }
            }
            @for (point, neighbor) in points.iter().zip(neighbors) {
                (node(*point, neighbor, "neighbor"))
            }
            (node(center, anchor, "anchor"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(id: &str, label: &str) -> Node {
        Node {
            entity_type: "claim".to_owned(),
            entity_id: id.to_owned(),
            label: label.to_owned(),
            href: format!("/claims/{id}"),
        }
    }

    #[test]
    fn neighbours_sit_inside_the_canvas_and_apart_from_each_other() {
        for count in [1, 2, 7, 40] {
            let (size, center, points) = layout(count);
            assert_eq!(
                center,
                Point {
                    x: size / 2.0,
                    y: size / 2.0
                }
            );
            for (i, p) in points.iter().enumerate() {
                assert!(p.x > RADIUS && p.x < size - RADIUS && p.y > RADIUS && p.y < size - RADIUS);
                for q in &points[i + 1..] {
                    assert!(((p.x - q.x).powi(2) + (p.y - q.y).powi(2)).sqrt() > 2.0 * RADIUS);
                }
            }
        }
    }

    #[test]
    fn edges_point_from_source_to_target_and_labels_are_escaped() {
        let anchor = n("clm_a", "anchor");
        let neighbors = [n("clm_b", "<script>alert(1)</script>")];
        let edges = [
            Edge {
                relation: "contradicts".to_owned(),
                outgoing: true,
                neighbor: 0,
            },
            Edge {
                relation: "supports".to_owned(),
                outgoing: false,
                neighbor: 0,
            },
        ];
        let html = svg(&anchor, &neighbors, &edges).into_string();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"));
        assert_eq!(html.matches("marker-end=\"url(#arrow)\"").count(), 2);
        // The outgoing edge starts near the anchor (the canvas centre), the incoming one ends there.
        let (size, center, points) = layout(1);
        let (outgoing, _) = edge_path(center, points[0], 0.0, 0.72);
        assert!(outgoing.starts_with(&format!("M{:.1}", size / 2.0)), "{outgoing}");
        assert!(html.contains(&outgoing));
    }
}
