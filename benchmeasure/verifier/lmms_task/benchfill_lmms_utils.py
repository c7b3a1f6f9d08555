"""Functions of the lmms-eval task that runs BenchFill candidate items (loaded by lmms-eval).

The task file is written per run by ``benchmeasure/verifier/lmms_backend.py`` next to a
copy of this module. Grading is not done here: the backend grades every logged response
with the project's graders, exactly as the direct backend does.
"""


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """The user message: the exact prompt the direct backend sends for this item."""
    return doc["prompt"]


def doc_to_target(doc):
    """The reference answer, logged as ``target``."""
    return doc["answer"]


def process_results(doc, results):
    """Count the responses kept for the document (all repeats, through ``take_first_k``)."""
    return {"n_responses": len(results)}
