"""The pages that stand for each kind of page a reader meets: what the audit measures and the browser tests open."""

# name -> the page's path in the built site
PAGES = {
    "overview": "",
    "graph breaks": "dynamo/graph_breaks/",
    "model zoo": "benchmarking/zoo/",
    "measuring": "benchmarking/method/",
    "output code": "triton-codegen/output_code/",
    "lab": "labs/benchmark_suite/",
    "TORCH_LOGS": "debugging/torch_logs/",
    "scheduler": "inductor/scheduler/",
    "contributing": "contributing/",
}
