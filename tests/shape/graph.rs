//! Strongly connected components of a directed graph (Tarjan's algorithm, iterative so
//! that no graph can overflow the stack).

/// The strongly connected components of the graph on nodes `0..adjacency.len()` whose
/// edges from node `n` go to `adjacency[n]`. Every node is in exactly one component; a
/// component is a set of nodes that all reach each other (a circle when it has more than one
/// node). Components come in reverse topological order, each sorted.
pub fn components(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    /// The index of a node not visited yet.
    const UNSEEN: usize = usize::MAX;
    let n = adjacency.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut result = Vec::new();
    let mut next = 0;
    for start in 0..n {
        if index[start] != UNSEEN {
            continue;
        }
        // Each frame: a node and how many of its edges were already followed.
        let mut frames = vec![(start, 0usize)];
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (v, ref mut edge)) = frames.last_mut() {
            if let Some(&w) = adjacency[v].get(*edge) {
                *edge += 1;
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                component.sort_unstable();
                result.push(component);
            }
        }
    }
    result
}

/// Components of small and of very deep graphs.
#[cfg(test)]
mod tests {
    use super::components;

    /// The components of more than one node of a graph given as edges.
    fn circles(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
        let mut adjacency = vec![Vec::new(); n];
        for &(a, b) in edges {
            adjacency[a].push(b);
        }
        let mut found: Vec<_> = components(&adjacency)
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect();
        found.sort();
        found
    }

    /// Circles are found; chains and self-loops make no circle of more than one node.
    #[test]
    fn finds_circles_and_leaves_chains() {
        assert_eq!(
            circles(4, &[(0, 1), (1, 2), (2, 3)]),
            Vec::<Vec<usize>>::new()
        );
        assert_eq!(
            circles(4, &[(0, 1), (1, 2), (2, 3), (3, 0)]),
            [vec![0, 1, 2, 3]]
        );
        assert_eq!(
            circles(6, &[(0, 1), (1, 0), (1, 2), (2, 3), (3, 4), (4, 2), (5, 5)]),
            [vec![0, 1], vec![2, 3, 4]]
        );
    }

    /// A 200 000-node ring and chain go through without recursion.
    #[test]
    fn every_node_once_and_deep_chains_do_not_overflow() {
        let n = 200_000;
        let adjacency: Vec<Vec<usize>> = (0..n).map(|i| vec![(i + 1) % n]).collect();
        let found = components(&adjacency);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].len(), n);
        let chain: Vec<Vec<usize>> = (0..n)
            .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
            .collect();
        assert_eq!(components(&chain).len(), n);
    }
}
