"""Weight selection: a small ViT initialized with selected weights of a larger one, then distilled.

Trains a teacher ViT briefly on procedural textures and saves it as ``.keras``; builds a
student with half the width and depth, shows which teacher slices each student variable
gets (``selection_report``), writes them (``select_weights``; Xu et al., ICLR 2024) and
fine-tunes the student with the paper's logit distillation (``recipes.fit_distill``).

Runs offline on a CPU in about two minutes (``--images 128 --epochs 1`` for a smoke run):
    python examples/weight_selection.py --out selection_example
"""

import argparse
import os

import keras

import keras_structinit as ks
from keras_structinit.selection import select_weights, selection_report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", default="selection_example", help="where the teacher .keras is written")
    args = parser.parse_args(argv)

    x, y = ks.datasets.procedural_images(args.images)
    options = dict(batch_size=64, rand_augment=None, verbose=0)
    teacher = ks.models.vit(4, 96, 4, 4, num_classes=10, input_shape=(32, 32, 3))
    ks.recipes.fit_cifar(teacher, (x, y), args.epochs, **options)
    os.makedirs(args.out, exist_ok=True)
    teacher_path = os.path.join(args.out, "teacher.keras")
    teacher.save(teacher_path)

    student = ks.models.vit(4, 48, 2, 2, num_classes=10, input_shape=(32, 32, 3))
    report = selection_report(student, teacher=teacher_path)
    print(report.summary())
    paths = select_weights(student, teacher=teacher_path)
    print(
        f"{len(paths)} student variables selected from {teacher_path}; "
        f"{len(report.skipped)} kept their init (the head)"
    )
    history = ks.recipes.fit_distill(
        student, keras.saving.load_model(teacher_path), (x, y), args.epochs, alpha=1.0, **options
    )
    print(f"distilled student: training accuracy {history.history['accuracy'][-1]:.3f}")
    return paths


if __name__ == "__main__":
    main()
