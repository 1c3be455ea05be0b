# The GPU image that builds the published site: every example runs on its GPU.
#   docker build -t torch-compile-inside .
#   docker run --gpus all -v "$PWD/site:/home/docs/project/site" torch-compile-inside
FROM pytorch/pytorch:2.11.0-cuda13.0-cudnn9-devel

COPY . /home/docs/project
WORKDIR /home/docs/project
# The same script sets up a bare GPU machine; it is exercised there even where Docker can't run.
RUN docker/setup-image.sh && useradd --create-home docs && chown -R docs:docs /home/docs/project
USER docs
# A fresh results folder makes the build re-run every example on this GPU instead of reusing
# stored outputs: the published site shows only what ran in the image. CXX=g++: a compiler that
# links libstdc++ statically makes AOTInductor packages that do not load (deploying/aoti.md).
ENV NO_MKDOCS_2_WARNING=1 EXECDOCS_RUN_DIR=/tmp/published-run CXX=g++
CMD ["nox", "--no-venv", "-s", "build"]
