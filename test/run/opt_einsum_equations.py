"""opt_einsum's test equations, shared by the execution corpus (run_corpus.py)
and the contraction-order check (test/Analysis/contraction_order.py), and
random tensor networks in opt_einsum's manner (that check and
bench/contraction_order.py).

OPT_EINSUM_FROZEN is a copy of every einsum expression in opt_einsum 3.4.0's
tests; opt_einsum_expressions() reads them from the installed package when
there is one. numpy_explicit() spells out numpy's implicit output.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re


def np_tokens(term: str) -> list[str]:
    """numpy einsum subscripts: one letter per axis, '...' as one token."""
    tokens, i = [], 0
    while i < len(term):
        if term.startswith("...", i):
            tokens.append("...")
            i += 3
        else:
            tokens.append(term[i])
            i += 1
    return tokens


# Frozen copy of what opt_einsum_expressions() extracts from opt_einsum 3.4.0's
# tests (used only when opt_einsum is not installed; otherwise they are read
# from its source). Invalid ones (error tests) are dropped later, as there.
OPT_EINSUM_FROZEN = """
a,->a ab,->ab ,ab,->ab ,,-> a,ab,abc->abc a,b,ab->ab ea,fb,gc,hd,abcd->efgh
ea,fb,abcd,gc,hd->efgh abcd,ea,fb,gc,hd->efgh acdf,jbje,gihb,hfac,gfac,gifabc,hfac
cd,bdhe,aidb,hgca,gc,hgibcd,hgac abhe,hidj,jgba,hiab,gab
bde,cdh,agdb,hica,ibd,hgicd,hiac chd,bde,agbc,hiad,hgc,hgi,hiad
chd,bde,agbc,hiad,bdi,cgh,agdb bdhe,acad,hiab,agac,hibd ab,ab,c-> ab,ab,c->c
ab,ab,cd,cd-> ab,ab,cd,cd->ac ab,ab,cd,cd->cd ab,ab,cd,cd,ef,ef-> ab,cd,ef->abcdef
ab,cd,ef->acdf ab,cd,de->abcde ab,cd,de->be ab,bcd,cd->abcd ab,bcd,cd->abd eb,cb,fb->cef
dd,fb,be,cdb->cef bca,cdb,dbf,afc-> dcc,fce,ea,dbf->ab fdf,cdd,ccd,afe->ae abcd,ad
ed,fcd,ff,bcf->be baa,dcf,af,cde->be bd,db,eac->ace fff,fae,bef,def->abd
efc,dbc,acf,fd->abe ab,ab ab,ba abc,abc abc,bac abc,cba ab,bc ab,cb ba,bc ba,cb abcd,cd
abcd,ab abcd,cdef abcd,cdef->feba abcd,efdc aab,bc->ac ab,bcc->ac aab,bcc->ac
baa,bcc->ac aab,ccb->ac aab,fa,df,ecc->bde ecb,fef,bad,ed->ac bcf,bbb,fbf,fc->
bb,ff,be->e bcb,bb,fc,fff-> fbb,dfd,fc,fc-> afd,ba,cc,dc->bf adb,bc,fa,cfc->d
bbd,bda,fc,db->acf dba,ead,cad->bce aef,fbc,dca->bde ,->. hbc,bdef,cdkj,ji,ikeh,lfo
bdef,cdkj,ji,ikeh,hbc,lfo ijab,acd,bce,df,ef->ji ab,cd,ad,cb ab,bc,cd cxa -> ,a,->a
,,a,->a abc,bdef,fghj,cem,mhk,ljk->adgl a,ac,ab,ad,cd,bd,bc-> abc,cfd,dbe,efa
nlp,nlq,pl->n a,bcd,efg-> a,b,abc->c , a,b,c ab,cd,ef,fg ... ij ...a->...a ...a->...
a...->... a...a->...a ...,... a,b ...a,...b ...a ...b,...a->... ij,ij->j ...i i...j i...
ij... i.. .i... j->..j j->.j... i->ij ij->jij ii ii->i ij->ij ...ij,...jk->...ik
ab,bc->ca abc,bcd,dea abc,def->fedcba abc,bcd,df->fa ijk,ikj i,j->ij ijk,k->ij AB,BC->CA
ij,jk,kl->li ij,jk,kl-> ab,bc,cd-> ab,bc,de-> ab,bc,cd->a ab,bc,cd->b a,b-> c,d-> k,k->
ijk,ijk-> ij,jk->ik ijl,jlk->ik ij,kj->ik ijl,kjl->ik ji,jk->ik jli,jlk->ik ji,kj->ik
jli,kjl->ik ij,jk->ki ijl,jlk->ki ij,kj->ki ijl,kjl->ki ji,jk->ki jli,jlk->ki ji,kj->ki
jli,kjl->ki ilj,jlk->ik ijl,ljk->ik ilj,kjl->ik ijl,klj->ik lji,jlk->ik jli,ljk->ik
ijk,ikj-> ijk,ik->j ijj,jk->ik ijk,j->ij ij,ij->ij ij,jk,kl->il ab,-> ab,bc->ac
ijk,kl,jl ijk,kl,jl,i->i abjk,kl,jl abjk,kl,jl,ab->ab ajk,kbl,jl,ab->ab obk,ijk->ioj
ab,bc,bd->acd
""".split()

EQ_RE = re.compile(r"^[A-Za-z.]*(,[A-Za-z.]*)*(->[A-Za-z.]*)?$")


def opt_einsum_expressions() -> tuple[list[str], str]:
    """(expressions, where from)."""
    spec = importlib.util.find_spec("opt_einsum")
    if spec is None or not spec.origin:
        return list(OPT_EINSUM_FROZEN), "frozen copy (opt_einsum not installed)"
    tests = os.path.join(os.path.dirname(spec.origin), "tests")
    files = ["test_contract.py", "test_paths.py", "test_input.py", "test_backends.py",
             "test_sharing.py", "test_blas.py", "test_edge_cases.py"]
    found: list[str] = []
    calls = {"contract", "contract_path", "contract_expression", "contract_fn", "build_views", "build_shapes"}
    called: set[str] = set()
    names = {"tests", "equations", "path_edge_tests", "path_scalar_tests", "eq", "string", "expression", "equation"}

    def strings(node):
        return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]

    for name in files:
        path = os.path.join(tests, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
                found += strings(node.value)  # the lists of expressions, eq = "..."
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "blas_tests" for t in node.targets):
                # ((["ij", "jk"], "ik", set("j")), "GEMM")
                for case in node.value.elts:
                    terms, out = case.elts[0].elts[0], case.elts[0].elts[1]
                    found.append(",".join(t.value for t in terms.elts) + "->" + out.value)
            elif isinstance(node, ast.Call):
                fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if fn in calls and node.args:
                    first = [s for s in strings(node.args[0])[:1] if len(s) >= 2]
                    found += first
                    called.update(first)
                elif fn == "parametrize" and len(node.args) >= 2:
                    found += strings(node.args[1])  # lists given inline
    found = [s for s in found if EQ_RE.match(s) and ("," in s or "->" in s or "..." in s or s in called)]
    seen: list[str] = []
    for s in found:
        if s not in seen:
            seen.append(s)
    return seen, f"the tests of the installed opt_einsum ({tests})"


def numpy_explicit(eq: str) -> str:
    """numpy's implicit output made explicit."""
    if "->" in eq:
        return eq
    letters = [c for c in eq if c.isalpha()]
    once = sorted(c for c in set(letters) if letters.count(c) == 1)
    return eq + "->" + ("..." if "..." in eq else "") + "".join(once)


def ein_einsum_side(term: str) -> str:
    return " ".join(np_tokens(term))


def random_equation(rng, n: int, regularity: int, n_out: int = 0,
                    global_dim: bool = False) -> tuple[str, dict[str, int]]:
    """A random contraction in the manner of opt_einsum.testing.rand_equation
    (which needs pytest): n operands, each bond index in two of them, n_out
    output indices in one each, sizes 2..9; with global_dim, one more index
    in every operand and the output. Returns the equation and the sizes."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + \
              [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    num = n * regularity // 2 + n_out
    size = {letters[i]: int(rng.integers(2, 10)) for i in range(num)}
    placed = []
    for i in range(num):
        placed += [letters[i]] if i < n_out else [letters[i]] * 2
    terms = [""] * n
    for k, ix in enumerate(rng.permutation(placed)):
        if k < n:
            terms[k] += ix
        else:
            where = int(rng.integers(0, n))
            while ix in terms[where]:
                where = int(rng.integers(0, n))
            terms[where] += ix
    out = "".join(letters[:n_out])
    if global_dim:
        g = letters[num]
        size[g] = int(rng.integers(2, 10))
        terms = [t + g for t in terms]
        out += g
    return ",".join(terms) + "->" + out, size
